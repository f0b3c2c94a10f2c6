package driver

import (
	"slices"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 1, 8, 2, 7}, 7},
	} {
		in := slices.Clone(c.in)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median reordered its input")
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for v, want := range map[float64]string{
		0.00123: "0.00123", 1.234: "1.23", 22.06: "22.1", 412.4: "412",
		45678: "45.7k", 412345: "412k", 1234567: "1.23M",
	} {
		got := formatRate(v)
		if got != want {
			t.Errorf("formatRate(%v) = %q, want %q", v, got, want)
		}
		back, err := parseRate(got)
		if err != nil || back < v*0.99 || back > v*1.01 {
			t.Errorf("parseRate(%q) = %v, %v", got, back, err)
		}
	}
	for d, want := range map[time.Duration]string{
		311: "311ns", 1720: "1.72µs", 42_500: "42.5µs", 365_400: "365µs", 12_340_000: "12.3ms",
		2_500_000_000: "2.50s", 125 * time.Second: "125s",
	} {
		got := formatDuration(d)
		if got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
		back, err := time.ParseDuration(got)
		if err != nil || back < d*99/100 || back > d*101/100 {
			t.Errorf("ParseDuration(%q) = %v, %v", got, back, err)
		}
	}
}

func TestSelectNames(t *testing.T) {
	known := []string{"a", "b", "c"}
	if got, err := selectNames("store", "all", known); err != nil || !slices.Equal(got, known) {
		t.Errorf("all: %v, %v", got, err)
	}
	// Known order, whatever order they were asked in.
	if got, err := selectNames("store", "c, a", known); err != nil || !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("c,a: %v, %v", got, err)
	}
	if _, err := selectNames("store", "a,d", known); err == nil {
		t.Error("accepted an unknown name")
	}
}
