// Command shalebench compares shale with goleveldb, Pebble v2, Badger v4 and
// bbolt on db_bench's workloads, each store with its defaults, and prints
// each store's median throughput and shale's ratio to each peer.
//
//	cd bench && go run ./cmd/shalebench -n 1000000 -passes 5
//	go run ./cmd/shalebench -workloads fillrandom,readrandom -stores shale,pebble -markdown
//
// Every store and workload runs in fresh processes (this executable, run as
// "shalebench worker ...") and a fresh directory. See bench/README.md.
package main

import (
	"os"

	"github.com/shale-db/shale/bench/internal/driver"
)

func main() {
	os.Exit(driver.Main(os.Args[1:], os.Stdout, os.Stderr))
}
