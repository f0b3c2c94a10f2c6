package driver

// Notes are printed under every report: what the figures mean and where the
// comparison is not like for like.
var Notes = []string{
	"Ratio = shale's median throughput / the peer's: above 1, shale is faster. " +
		"For recovery the throughput is 1 / (Open + one Get), so the ratio is the peer's time over shale's.",
	"Guarantees differ. A shale or goleveldb NoSync put has reached the operating system when it returns " +
		"and survives kill -9. Pebble keeps NoSync writes in its own buffer and loses acknowledged ones " +
		"when the process is killed. So for single unsynced puts (fillseq, fillrandom, overwrite) " +
		"goleveldb is the like-for-like peer, and Pebble's figure stands beside it with that difference. " +
		"fillbatch amortizes the buffer over 1,000 puts and is held against Pebble; it reuses one batch, " +
		"fillbatch-new makes a new one for every 1,000 puts (shale's and goleveldb's zero value, " +
		"Pebble's NewBatch from its pool), as programs that make a batch per write do. " +
		"Sync writes and reads compare directly.",
	"bbolt fsyncs every commit, so its unsynced puts share one transaction per 1,000 puts " +
		"(every 1,000th put's latency includes the commit); up to 999 acknowledged puts are lost on kill -9. " +
		"A Sync put is a transaction of its own; a fillbatch batch is one (synced) transaction.",
	"Badger has no per-write sync: fillsync and fillsync8 open it with SyncWrites. Its logger is off. " +
		"It writes its logs and tables through mmap, which wchar does not count, so its WA understates; " +
		"compare its WA dev.",
	"Every store otherwise runs with its defaults (block caches: shale, goleveldb and Pebble 8 MiB, " +
		"Badger 256 MiB), unless -cache sizes every block cache (the heading says), and except readrandom4x, " +
		"which sets every block cache to a quarter of the fill's user bytes (n x 116 / 4); bbolt has no block cache.",
	"Each store and workload runs in fresh processes and a fresh directory: an untimed fill " +
		"(fillrandom; for recovery n/2 puts ended by SIGKILL) in one process, then the timed workload " +
		"in another. Stores alternate within each pass. readrandom-reopen fills, closes and opens " +
		"the store again in the timed process, untimed, then reads: as a program that fills and then reads.",
	"RSS: ru_maxrss of the timed process. anon: its largest RssAnon, sampled every 5 ms: RSS " +
		"less the pages of the binary (shared by every store's workers; how many a process maps " +
		"depends on the page cache) and of mapped files (bbolt's database, Badger's logs " +
		"and tables). disk: every file in the directory after Close. " +
		"WA: wchar of /proc/self/io (bytes handed to write syscalls, Open to Close) over 116 bytes per put " +
		"made in the timed process. WA dev: write_bytes (pages dirtied toward the disk, mmap included; 0 on tmpfs) " +
		"over the same.",
	"Transactions (shale, Badger, bbolt only): txn-rmw reads two random keys and writes both back in one " +
		"transaction, committed unsynced (txn-rmw8: 8 goroutines); txn-rmw-sync commits synced from 8 " +
		"goroutines (Badger with SyncWrites; bbolt syncs every commit and runs one writer at a time); " +
		"txn-view is a read-only transaction of two Gets. A commit refused for a conflict is not retried: " +
		"throughput counts the commits, and the found column gives the share refused.",
	"Latency: every put (fillbatch: every batch) of the single-writer fills timed on its own; " +
		"percentiles within 1%, max exact; each the median over the passes.",
	"Gets: Pebble's and bbolt's lend the value without a copy, Badger's reads it in place (Item.Value), " +
		"shale's copies it into a reused buffer (GetAppend; its Get would allocate the copy), goleveldb's " +
		"returns a new copy.",
	"Sizes: 16-byte keys (%016d), 100-byte values of which half repeats (db_bench's generator); " +
		"random keys uniform over [0, n) with repeats, seeded; fillsync n/100 puts, fillsync8 8 x n/500, " +
		"seekrandom SeekGE + 10 Next, readwhilewriting one reader and one writer.",
}
