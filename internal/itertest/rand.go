package itertest

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/ikey"
)

// Rand returns a generator seeded from the SHALE_SEED environment variable
// if set, else from the clock, and logs the seed so that a failing run can
// be replayed with SHALE_SEED=<seed>.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SHALE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SHALE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with SHALE_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Long reports whether long randomized runs were asked for (SHALE_LONG=1).
func Long() bool { return os.Getenv("SHALE_LONG") == "1" }

// Scale returns short, or long when Long() holds.
func Scale(short, long int) int {
	if Long() {
		return long
	}
	return short
}

// UserKey draws a user key from a small alphabet ("a" to "f", one or two
// letters), so that random keys collide often.
func UserKey(rng *rand.Rand) []byte {
	k := []byte{byte('a' + rng.IntN(6))}
	if rng.IntN(3) == 0 {
		k = append(k, byte('a'+rng.IntN(6)))
	}
	return k
}

// InternalKey draws an internal key: UserKey, a sequence number below
// maxSeq, and a kind.
func InternalKey(rng *rand.Rand, maxSeq uint64) []byte {
	return ikey.Make(UserKey(rng), rng.Uint64N(maxSeq), ikey.Kind(rng.IntN(2)))
}
