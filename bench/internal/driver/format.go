package driver

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func itoa(n int) string { return strconv.Itoa(n) }

// sig3 prints v with about three significant digits and never an exponent
// for v >= 1e-4.
func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// formatRate prints a throughput with a k or M suffix.
func formatRate(v float64) string {
	switch {
	case v >= 1e6:
		return sig3(v/1e6) + "M"
	case v >= 1e3:
		return sig3(v/1e3) + "k"
	}
	return sig3(v)
}

// parseRate reads what formatRate printed.
func parseRate(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mult, err
}

// formatDuration prints d with three significant digits in ns, µs, ms or s;
// time.ParseDuration reads it back.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return sig3(float64(d)/1e3) + "µs"
	case d < time.Second:
		return sig3(float64(d)/1e6) + "ms"
	}
	return sig3(d.Seconds()) + "s"
}

func formatMiB(bytes float64) string { return sig3(bytes / (1 << 20)) }
