package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows a running count on stderr, at most every progressEvery,
// when stderr is a terminal; otherwise it stays silent. A nil *progress is
// silent too.
type progress struct {
	w     io.Writer
	verb  string // "loaded", "dumped"
	n     int64
	last  time.Time
	shown bool
}

const progressEvery = 500 * time.Millisecond

// newProgress returns a progress reporter, or nil if stderr is not a
// terminal.
func (e *env) newProgress(verb string) *progress {
	f, ok := e.stderr.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progress{w: f, verb: verb, last: time.Now()}
}

// add counts n more entries.
func (p *progress) add(n int) {
	if p == nil {
		return
	}
	p.n += int64(n)
	if p.n%1024 != 0 && n == 1 {
		return // look at the clock only now and then
	}
	if now := time.Now(); now.Sub(p.last) >= progressEvery {
		p.last = now
		p.shown = true
		fmt.Fprintf(p.w, "\rkvcli: %s %d entries", p.verb, p.n)
	}
}

// done ends the progress line, if one was shown.
func (p *progress) done() {
	if p != nil && p.shown {
		fmt.Fprintf(p.w, "\rkvcli: %s %d entries\n", p.verb, p.n)
	}
}
