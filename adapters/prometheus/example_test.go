package shaleprom_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shale-db/shale"
	shaleprom "github.com/shale-db/shale/adapters/prometheus"
	"github.com/shale-db/shale/vfs"
)

// A collector registered for a DB in memory: the DB's metrics while it is
// attached, the event metrics for as long as the collector lives.
func Example() {
	c := shaleprom.New(shaleprom.Opts{})
	l := c.EventListener()
	db, err := shale.Open("/db", &shale.Options{FS: vfs.NewMem(), EventListener: &l})
	if err != nil {
		log.Fatal(err)
	}
	c.Attach(db)
	reg := prometheus.NewRegistry() // or prometheus.MustRegister(c)
	reg.MustRegister(c)

	for i := range 100 {
		if err := db.Put(fmt.Appendf(nil, "key%03d", i), []byte("value"), shale.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		log.Fatal(err)
	}
	printMetrics(reg, "shale_db_flushes_total", `shale_db_level_tables{level="0"}`)

	// Detach before Close. Close returns once every event has been
	// delivered; the events' counters stay.
	c.Detach()
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after Close:")
	printMetrics(reg, "shale_db_flushes_total", `shale_flushes_total{reason="forced"}`, "shale_tables_created_total")
	// Output:
	// shale_db_flushes_total 1
	// shale_db_level_tables{level="0"} 1
	// after Close:
	// shale_db_flushes_total absent
	// shale_flushes_total{reason="forced"} 1
	// shale_tables_created_total{reason="compacting"} 0
	// shale_tables_created_total{reason="flushing"} 1
}

// printMetrics prints the series of reg that match the wanted names,
// each a metric name alone or followed by its labels.
func printMetrics(reg prometheus.Gatherer, wanted ...string) {
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, w := range wanted {
		found := false
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				var labels []string
				for _, lp := range m.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
				}
				series := mf.GetName()
				if len(labels) > 0 {
					series += "{" + strings.Join(labels, ",") + "}"
				}
				if series != w && mf.GetName() != w {
					continue
				}
				found = true
				switch {
				case m.GetCounter() != nil:
					fmt.Println(series, m.GetCounter().GetValue())
				case m.GetGauge() != nil:
					fmt.Println(series, m.GetGauge().GetValue())
				}
			}
		}
		if !found {
			fmt.Println(w, "absent")
		}
	}
}
