package shale_test

import (
	"testing"

	"github.com/shale-db/shale"
)

func scanPrefix(t *testing.T, db *shale.DB, prefix string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for e, err := range db.All(shale.PrefixOptions([]byte(prefix))) {
		if err != nil {
			t.Fatalf("scan %q: %v", prefix, err)
		}
		m[string(e.Key)] = string(e.Value)
	}
	return m
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}
