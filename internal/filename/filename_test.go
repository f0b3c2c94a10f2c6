package filename

import "testing"

func TestNamesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		t    Type
		num  uint64
		name string
	}{
		{Log, 3, "000003.log"},
		{Table, 1234567, "1234567.ldb"},
		{Manifest, 12, "MANIFEST-000012"},
		{Current, 0, "CURRENT"},
		{Lock, 0, "LOCK"},
		{InfoLog, 0, "LOG"},
		{Temp, 9, "000009.dbtmp"},
	} {
		if got := Name(tc.t, tc.num); got != tc.name {
			t.Errorf("Name(%d, %d) = %q, want %q", tc.t, tc.num, got, tc.name)
		}
		typ, num, ok := Parse(tc.name)
		if !ok || typ != tc.t || num != tc.num {
			t.Errorf("Parse(%q) = %d, %d, %v", tc.name, typ, num, ok)
		}
	}
}

func TestParseOthers(t *testing.T) {
	// LevelDB's older table name is read.
	if typ, num, ok := Parse("000042.sst"); !ok || typ != Table || num != 42 {
		t.Errorf("Parse(000042.sst) = %d, %d, %v", typ, num, ok)
	}
	if typ, _, ok := Parse("LOG.old"); !ok || typ != InfoLog {
		t.Errorf("Parse(LOG.old) = %d, %v", typ, ok)
	}
	// Files other tools leave, and junk, are not database files: left alone.
	for _, name := range []string{"CURRENT.bak", "CURRENT.123", "lost", "000001.txt",
		"MANIFEST-", "MANIFEST-x", ".log", "abc.log", "-1.log", "99999999999999999999999.log"} {
		if typ, num, ok := Parse(name); ok {
			t.Errorf("Parse(%q) = %d, %d, true; want not a database file", name, typ, num)
		}
	}
}

// Numbers above MaxNum are not database files' numbers.
func TestParseRefusesHugeNumbers(t *testing.T) {
	for _, name := range []string{"MANIFEST-18446744073709551615", "4611686018427387904.log", "18446744073709551615.ldb", "4611686018427387904.dbtmp"} {
		if _, _, ok := Parse(name); ok {
			t.Errorf("Parse(%s) accepted a number above MaxNum", name)
		}
	}
	if typ, num, ok := Parse(Name(Table, MaxNum)); !ok || typ != Table || num != MaxNum {
		t.Errorf("Parse(%s) = %d, %d, %v", Name(Table, MaxNum), typ, num, ok)
	}
}
