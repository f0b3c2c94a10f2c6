package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/shale-db/shale"
)

// crashWriterCmd is the child process of crashtest: it writes until it is
// killed and acknowledges on stdout each write that returned. It is not
// meant to be run by hand.
var crashWriterCmd = &command{
	name:    "crashtest-writer",
	summary: "the writer process crashtest runs and kills (internal)",
	hidden:  true,
	run:     runCrashWriter,
}

// crashWriterLifetime bounds the child's life should its parent never kill
// it (the parent dying closes stdout, which also ends the child).
const crashWriterLifetime = 5 * time.Minute

// Fault names for crashtest --fault, to check that the test detects loss.
const faultLoseAcked = "lose-acked"

func runCrashWriter(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	cycle := fs.Int("cycle", 0, "cycle number")
	writers := fs.Int("writers", 4, "writer goroutines")
	seed := fs.Uint64("seed", 0, "workload seed")
	maxOps := fs.Int("max-ops", 20000, "operations per writer, then idle")
	fault := fs.String("fault", "", "inject a fault: "+faultLoseAcked)
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	dir, err := e.needDB()
	if err != nil {
		return err
	}
	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 256 << 10, Logger: e.logger()})
	if err != nil {
		return failure(err)
	}
	// The acks go straight to the pipe, one write(2) each, so that an ack
	// the parent has not read was not yet written when the next write began.
	if _, err := os.Stdout.WriteString("ready\n"); err != nil {
		return failure(err)
	}
	for g := range *writers {
		go crashWriterLoop(db, newOpStream(*seed, *cycle, g), *maxOps, *fault == faultLoseAcked)
	}
	time.Sleep(crashWriterLifetime)
	return failuref("crashtest-writer: not killed within %v", crashWriterLifetime)
}

// crashWriterLoop performs the stream's operations and acknowledges each
// with a line "G I". With lose, it acknowledges some writes it never made.
func crashWriterLoop(db *shale.DB, s *opStream, maxOps int, lose bool) {
	var b shale.Batch
	for i := range maxOps {
		op := s.next()
		var err error
		if !lose || i%7 != 3 {
			err = applyOp(db, &b, op)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "kvcli: crashtest-writer: writer %d, operation %d: %v\n", s.g, i, err)
			os.Exit(exitFailure)
		}
		if _, err := os.Stdout.WriteString(strconv.Itoa(s.g) + " " + strconv.Itoa(i) + "\n"); err != nil {
			os.Exit(exitFailure)
		}
	}
}

// applyOp writes op to db.
func applyOp(db *shale.DB, b *shale.Batch, op crashOp) error {
	d := shale.NoSync
	if op.sync {
		d = shale.Sync
	}
	switch op.kind {
	case opPut:
		return db.Put(op.keys[0], op.values[0], d)
	case opDelete:
		return db.Delete(op.del, d)
	}
	b.Reset()
	for i, k := range op.keys {
		b.Put(k, op.values[i])
	}
	if op.del != nil {
		b.Delete(op.del)
	}
	return db.Write(b, d)
}
