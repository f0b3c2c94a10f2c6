package main

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// recordModes are the four line formats: text or JSON, plain or hex.
var recordModes = []struct{ json, hex bool }{{false, false}, {false, true}, {true, false}, {true, true}}

// writeRecords writes recs (key, value pairs) in one line format.
func writeRecords(t testing.TB, json, hex bool, recs ...[]byte) []byte {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	var w recordWriter = &textWriter{w: bw, hex: hex}
	if json {
		w = newJSONWriter(bw, hex, false)
	}
	for i := 0; i+1 < len(recs); i += 2 {
		if err := w.write(recs[i], recs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readRecords reads records until EOF or an error, at most limit of them.
func readRecords(data []byte, json, hex bool, limit int) ([][]byte, error) {
	rr := &recordReader{r: bufio.NewReader(bytes.NewReader(data)), json: json, hex: hex}
	var recs [][]byte
	for len(recs) < 2*limit {
		k, v, err := rr.next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		recs = append(recs, k, v)
	}
	return recs, nil
}

// FuzzRecords checks that every line format reads back exactly the keys
// and values written, whatever their bytes.
func FuzzRecords(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"k", "v"}, {"a\tb", "c\r\n"}, {"\xff\x00", "é\u2028"}, {`\x41`, "\r"}} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		for _, m := range recordModes {
			data := writeRecords(t, m.json, m.hex, key, value, value, key)
			got, err := readRecords(data, m.json, m.hex, 3)
			if err != nil || len(got) != 4 || !bytes.Equal(got[0], key) || !bytes.Equal(got[1], value) ||
				!bytes.Equal(got[2], value) || !bytes.Equal(got[3], key) {
				t.Fatalf("json=%v hex=%v: wrote %q %q, read %q, %v", m.json, m.hex, key, value, got, err)
			}
		}
	})
}

// FuzzRecordReader feeds arbitrary input to the record reader: it must not
// panic, and the records it accepts before any error must survive being
// written and read again.
func FuzzRecordReader(f *testing.F) {
	for _, m := range recordModes {
		f.Add(writeRecords(f, m.json, m.hex, []byte("k\t1"), []byte("\xff"), nil, nil), m.json, m.hex)
	}
	f.Add([]byte("a\tb\r\n\n{\"key\":\"x\"}\n"), false, false)
	f.Add([]byte(`{"key":"x","value_base64":"/w=="}`+"\n\n"+`{"key_hex":"41","value":""} {}`), true, false)
	f.Fuzz(func(t *testing.T, data []byte, json, hex bool) {
		recs, _ := readRecords(data, json, hex, len(data)+1)
		if len(recs) > 2*(len(data)+1) {
			t.Fatalf("%d records from %d bytes", len(recs)/2, len(data))
		}
		again, err := readRecords(writeRecords(t, json, hex, recs...), json, hex, len(recs))
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-read %d of %d records: %v", len(again)/2, len(recs)/2, err)
		}
		for i := range recs {
			if !bytes.Equal(again[i], recs[i]) {
				t.Fatalf("record part %d: %q became %q", i, recs[i], again[i])
			}
		}
	})
}
