package driver

import (
	"slices"
	"time"

	"github.com/shale-db/shale/bench/internal/gen"
	"github.com/shale-db/shale/bench/internal/hist"
	"github.com/shale-db/shale/bench/internal/worker"
)

// Report holds every sample and, per workload and store, their medians.
//
// Cells maps workload, then store, to its samples and medians; Workloads
// and Stores give the order to print them in.
type Report struct {
	N         int                         `json:"n"`
	Passes    int                         `json:"passes"`
	Seed      uint64                      `json:"seed"`
	CacheMiB  int64                       `json:"cache_mib,omitempty"` // -cache; 0: defaults
	Workloads []string                    `json:"workloads"`
	Stores    []string                    `json:"stores"`
	Machine   Machine                     `json:"machine"`
	Cells     map[string]map[string]*Cell `json:"cells"` // workload, store
	Started   time.Time                   `json:"started"`
	Took      time.Duration               `json:"took"`
}

// Cell is one store on one workload.
type Cell struct {
	Samples []Sample `json:"samples"`
	Median  Median   `json:"median"`
}

// Median is the median of each figure over the passes, taken figure by
// figure (so the p99 is the median of the passes' p99s).
type Median struct {
	Throughput float64 `json:"throughput"` // ops per second
	Seconds    float64 `json:"seconds"`
	PeakRSS    float64 `json:"peak_rss"`
	PeakAnon   float64 `json:"peak_anon"`
	DiskBytes  float64 `json:"disk_bytes"`
	Writes     float64 `json:"writes"`      // puts made in the timed process
	WriteAmp   float64 `json:"write_amp"`   // wchar / user bytes; 0 if nothing was put
	DeviceAmp  float64 `json:"device_amp"`  // write_bytes / user bytes
	FoundShare float64 `json:"found_share"` // of lookups; for recovery 1 or 0
	// ConflictShare is the share of transactions refused for a conflict.
	ConflictShare float64       `json:"conflict_share,omitempty"`
	Latency       *hist.Summary `json:"latency,omitempty"`
}

func newReport(cfg Config) *Report {
	r := &Report{N: cfg.N, Passes: cfg.Passes, Seed: cfg.Seed, CacheMiB: cfg.CacheBytes >> 20, Workloads: cfg.Workloads,
		Stores: cfg.Stores, Machine: describeMachine(), Cells: map[string]map[string]*Cell{},
		Started: time.Now()}
	for _, w := range cfg.Workloads {
		r.Cells[w] = map[string]*Cell{}
		for _, s := range cfg.Stores {
			r.Cells[w][s] = &Cell{}
		}
	}
	return r
}

func (r *Report) add(workload, store string, s Sample) {
	c := r.Cells[workload][store]
	c.Samples = append(c.Samples, s)
}

func (r *Report) summarize() {
	r.Took = time.Since(r.Started)
	for wname, row := range r.Cells {
		w, _ := worker.Lookup(wname)
		for _, c := range row {
			c.Median = medianOf(w, c.Samples)
		}
	}
}

func (s Sample) throughput() float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Seconds
}

func medianOf(w worker.Workload, ss []Sample) Median {
	pick := func(f func(Sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		return median(v)
	}
	m := Median{
		Throughput:    pick(Sample.throughput),
		Seconds:       pick(func(s Sample) float64 { return s.Seconds }),
		PeakRSS:       pick(func(s Sample) float64 { return float64(s.PeakRSS) }),
		PeakAnon:      pick(func(s Sample) float64 { return float64(s.PeakAnon) }),
		DiskBytes:     pick(func(s Sample) float64 { return float64(s.DiskBytes) }),
		Writes:        pick(func(s Sample) float64 { return float64(s.Writes) }),
		WriteAmp:      pick(func(s Sample) float64 { return ratio(s.WChar, s.Writes*gen.UserBytes) }),
		DeviceAmp:     pick(func(s Sample) float64 { return ratio(s.WriteBytes, s.Writes*gen.UserBytes) }),
		FoundShare:    pick(func(s Sample) float64 { return ratio(s.Found, s.Ops) }),
		ConflictShare: pick(func(s Sample) float64 { return ratio(s.Conflicts, s.Ops+s.Conflicts) }),
	}
	if w.Latency {
		m.Latency = medianLatency(ss)
	}
	return m
}

// medianLatency takes the median of each percentile over the samples.
func medianLatency(ss []Sample) *hist.Summary {
	pick := func(f func(hist.Summary) time.Duration) time.Duration {
		v := make([]float64, 0, len(ss))
		for _, s := range ss {
			if s.Latency != nil {
				v = append(v, float64(f(*s.Latency)))
			}
		}
		return time.Duration(median(v))
	}
	return &hist.Summary{
		Count: uint64(pick(func(l hist.Summary) time.Duration { return time.Duration(l.Count) })),
		P50:   pick(func(l hist.Summary) time.Duration { return l.P50 }),
		P99:   pick(func(l hist.Summary) time.Duration { return l.P99 }),
		P999:  pick(func(l hist.Summary) time.Duration { return l.P999 }),
		P9999: pick(func(l hist.Summary) time.Duration { return l.P9999 }),
		Max:   pick(func(l hist.Summary) time.Duration { return l.Max }),
	}
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// median returns the middle value, or the mean of the two middle ones; 0 for
// none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
