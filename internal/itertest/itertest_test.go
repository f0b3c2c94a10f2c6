package itertest_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/itertest"
)

func TestParse(t *testing.T) {
	kvs := itertest.Parse("a#5,PUT:x:y", "b#0,DEL", "c,PUT#7,PUT")
	if got := itertest.Format(kvs); got != "a#5,PUT:x:y b#0,DEL: c,PUT#7,PUT:" {
		t.Fatalf("Format(Parse) = %q", got)
	}
	if !bytes.Equal(kvs[0].Key, ikey.Make([]byte("a"), 5, ikey.KindSet)) {
		t.Fatalf("key %x", kvs[0].Key)
	}
}

var cfg = itertest.Config{
	Cmp:     ikey.Compare,
	SeekKey: func(r *rand.Rand) []byte { return itertest.InternalKey(r, 5) },
	Ops:     300,
}

func entries() []itertest.KV {
	return itertest.Parse("a#3,PUT:1", "a#1,DEL", "b#2,PUT:2", "c#4,PUT:3", "d#1,PUT:4")
}

// The driver accepts the slice iterator, which follows the model's rules,
// and the slice iterator keeps the contract (strict mode stays quiet).
func TestRunAgreesWithIter(t *testing.T) {
	rng := itertest.Rand(t)
	it := itertest.New(entries()).Strict()
	if err := itertest.Run(rng, it, entries(), cfg); err != nil {
		t.Fatal(err)
	}
}

// The driver notices a wrong entry, and reports an injected failure.
func TestRunCatchesDifferences(t *testing.T) {
	rng := itertest.Rand(t)
	want := entries()
	want[2].Value = []byte("other")
	err := itertest.Run(rng, itertest.New(entries()), want, cfg)
	if err == nil || !strings.Contains(err.Error(), "want") {
		t.Fatalf("Run over a differing iterator = %v", err)
	}
	boom := errors.New("boom")
	err = itertest.Run(rng, itertest.New(entries()).FailAfter(5, boom), entries(), cfg)
	if !errors.Is(err, boom) {
		t.Fatalf("Run over a failing iterator = %v, want boom", err)
	}
}

func TestStrict(t *testing.T) {
	it := itertest.FromStrings("a#1,PUT").Strict()
	it.First()
	it.Next()
	if it.Violation() != nil {
		t.Fatalf("violation after a legal Next: %v", it.Violation())
	}
	it.Next()
	if it.Violation() == nil {
		t.Fatal("Next past the end not reported")
	}
}
