package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// arg decodes a key or value given on the command line: as is, or per
// --hex or --escaped. A malformed one is a usage error.
func (e *env) arg(what, s string) ([]byte, error) {
	b, err := e.decode(s)
	if err != nil {
		return nil, usageError(fmt.Sprintf("%s %q: %v", what, s, err))
	}
	return b, nil
}

// decode decodes s per --hex or --escaped; without either it is s's bytes.
func (e *env) decode(s string) ([]byte, error) {
	switch {
	case e.hex:
		return hex.DecodeString(s)
	case e.escaped:
		return unescape(s)
	}
	return []byte(s), nil
}

// show formats a key or value for output: hex with --hex, else escaped.
func (e *env) show(b []byte) string {
	if e.hex {
		return hex.EncodeToString(b)
	}
	return escape(b)
}

// recordWriter writes key-value records in one of kvcli's line formats.
type recordWriter interface {
	write(key, value []byte) error
}

// textWriter writes "KEY<TAB>VALUE" lines, or "KEY" lines when keysOnly.
type textWriter struct {
	w        *bufio.Writer
	hex      bool
	keysOnly bool
}

func (t *textWriter) write(key, value []byte) error {
	t.w.WriteString(t.format(key))
	if !t.keysOnly {
		t.w.WriteByte('\t')
		t.w.WriteString(t.format(value))
	}
	return t.w.WriteByte('\n')
}

func (t *textWriter) format(b []byte) string {
	if t.hex {
		return hex.EncodeToString(b)
	}
	return escape(b)
}

// jsonRecord is one line of the JSON lines format. Exactly one field of
// each group is set: "key" holds a key that is valid UTF-8, "key_base64"
// (standard base64) any other, "key_hex" every key when --hex is given;
// likewise for the value.
type jsonRecord struct {
	Key         *string `json:"key,omitempty"`
	KeyBase64   *string `json:"key_base64,omitempty"`
	KeyHex      *string `json:"key_hex,omitempty"`
	Value       *string `json:"value,omitempty"`
	ValueBase64 *string `json:"value_base64,omitempty"`
	ValueHex    *string `json:"value_hex,omitempty"`
}

// jsonWriter writes jsonRecord lines.
type jsonWriter struct {
	enc      *json.Encoder
	hex      bool
	keysOnly bool
}

func newJSONWriter(w io.Writer, hex, keysOnly bool) *jsonWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonWriter{enc: enc, hex: hex, keysOnly: keysOnly}
}

func (j *jsonWriter) write(key, value []byte) error {
	var r jsonRecord
	r.Key, r.KeyBase64, r.KeyHex = j.fields(key)
	if !j.keysOnly {
		r.Value, r.ValueBase64, r.ValueHex = j.fields(value)
	}
	return j.enc.Encode(&r)
}

// fields returns b as the one field of its group that applies.
func (j *jsonWriter) fields(b []byte) (plain, b64, hx *string) {
	switch {
	case j.hex:
		s := hex.EncodeToString(b)
		return nil, nil, &s
	case utf8.Valid(b):
		s := string(b)
		return &s, nil, nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return nil, &s, nil
}

// recordReader reads the records that textWriter or jsonWriter wrote.
type recordReader struct {
	r    *bufio.Reader
	json bool
	hex  bool
	line int // number of the line last read
}

// next returns the next record, or io.EOF after the last. Errors name the
// line.
func (rr *recordReader) next() (key, value []byte, err error) {
	for {
		line, err := rr.r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return nil, nil, err
		}
		rr.line++
		line = bytes.TrimSuffix(line, []byte("\n"))
		// A raw carriage return never ends an escaped line: it is a CRLF.
		line = bytes.TrimSuffix(line, []byte("\r"))
		if rr.json && len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines between JSON records are harmless
		}
		if rr.json {
			key, value, err = decodeJSONRecord(line)
		} else {
			key, value, err = rr.decodeText(line)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", rr.line, err)
		}
		return key, value, nil
	}
}

// decodeText decodes a "KEY<TAB>VALUE" line.
func (rr *recordReader) decodeText(line []byte) (key, value []byte, err error) {
	k, v, ok := bytes.Cut(line, []byte("\t"))
	if !ok {
		return nil, nil, errors.New("no tab between key and value")
	}
	dec := unescape
	if rr.hex {
		dec = hex.DecodeString
	}
	if key, err = dec(string(k)); err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	if value, err = dec(string(v)); err != nil {
		return nil, nil, fmt.Errorf("value: %w", err)
	}
	return key, value, nil
}

// decodeJSONRecord decodes one JSON line; unknown fields are an error.
func decodeJSONRecord(line []byte) (key, value []byte, err error) {
	var r jsonRecord
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return nil, nil, err
	}
	if d.More() {
		return nil, nil, errors.New("more than one JSON value on the line")
	}
	if key, err = oneOf("key", r.Key, r.KeyBase64, r.KeyHex); err != nil {
		return nil, nil, err
	}
	if value, err = oneOf("value", r.Value, r.ValueBase64, r.ValueHex); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// oneOf decodes the one field of a group that is present.
func oneOf(name string, plain, b64, hx *string) ([]byte, error) {
	n := 0
	for _, p := range []*string{plain, b64, hx} {
		if p != nil {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("want exactly one of %q, %q and %q", name, name+"_base64", name+"_hex")
	}
	switch {
	case plain != nil:
		return []byte(*plain), nil
	case b64 != nil:
		b, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, fmt.Errorf("%s_base64: %w", name, err)
		}
		return b, nil
	}
	b, err := hex.DecodeString(*hx)
	if err != nil {
		return nil, fmt.Errorf("%s_hex: %w", name, err)
	}
	return b, nil
}
