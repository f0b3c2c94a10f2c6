package wal

import "testing"

// The constants below were computed by hand with a bitwise CRC-32C (the
// reflected polynomial 0x82f63b78), independently of hash/crc32.
func TestChecksumConstants(t *testing.T) {
	cases := []struct {
		in   []byte
		want uint32
	}{
		{[]byte("123456789"), 0xe3069283}, // the CRC-32C check value
		{make([]byte, 32), 0x8a9136aa},    // RFC 3720 B.4: 32 zero bytes
	}
	for _, c := range cases {
		if got := unmask(checksum(c.in)); got != c.want {
			t.Errorf("crc32c(%q) = %#08x, want %#08x", c.in, got, c.want)
		}
	}
	if got := mask(0xe3069283); got != 0xc78ab0e5 {
		t.Errorf("mask(0xe3069283) = %#08x, want 0xc78ab0e5", got)
	}
	// The header checksum of a FULL fragment holding "foo": the type byte
	// then the payload.
	if got := checksum([]byte("\x01foo")); got != 0x7ab35fdd {
		t.Errorf("checksum(FULL foo) = %#08x, want 0x7ab35fdd", got)
	}
	for _, c := range []uint32{0, 1, 0xe3069283, 0xffffffff, 0xa282ead8} {
		if unmask(mask(c)) != c {
			t.Errorf("unmask(mask(%#x)) != %#x", c, c)
		}
	}
}
