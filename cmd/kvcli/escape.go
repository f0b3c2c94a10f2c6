package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text form of keys and values (scan, dump, load, get's output):
//
//   - a printable UTF-8 character (unicode.IsPrint: letters, marks,
//     numbers, punctuation, symbols and the ASCII space) stands for itself,
//     except the backslash, written \\;
//   - tab, newline and carriage return are written \t, \n and \r;
//   - every other byte (control characters, other non-printable
//     characters, bytes that are not valid UTF-8) is written \xNN, two
//     lower-case hex digits per byte.
//
// So an escaped string holds no tab and no newline, a backslash always
// begins an escape, and unescape(escape(b)) == b for every byte string b.
// unescape accepts hex digits in either case and rejects any other escape.

// escape returns b in the text form.
func escape(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	appendEscaped(&sb, b)
	return sb.String()
}

// appendEscaped writes b in the text form to sb.
func appendEscaped(sb *strings.Builder, b []byte) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case (r != utf8.RuneError || n > 1) && unicode.IsPrint(r):
			// n > 1: U+FFFD itself, validly encoded, not an invalid byte.
			sb.Write(b[:n])
		default:
			for _, c := range b[:n] {
				fmt.Fprintf(sb, `\x%02x`, c)
			}
		}
		b = b[n:]
	}
}

// unescape decodes the text form.
func unescape(s string) ([]byte, error) {
	if !strings.Contains(s, `\`) {
		return []byte(s), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 == len(s) {
			return nil, errors.New("backslash at the end (write \\\\ for a backslash)")
		}
		i++
		switch s[i] {
		case '\\':
			out = append(out, '\\')
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 'x':
			if i+3 > len(s) {
				return nil, fmt.Errorf("\\x at offset %d needs two hex digits", i-1)
			}
			v, err := hex.DecodeString(s[i+1 : i+3])
			if err != nil {
				return nil, fmt.Errorf("\\x at offset %d needs two hex digits", i-1)
			}
			out = append(out, v[0])
			i += 2
		default:
			return nil, fmt.Errorf("unknown escape \\%c at offset %d (write \\\\ for a backslash)", s[i], i-1)
		}
	}
	return out, nil
}
