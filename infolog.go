package shale

import (
	"log/slog"

	"github.com/shale-db/shale/internal/filename"
)

// openInfoLog gives a writable DB whose Options.Logger was nil a logger
// that writes to the LOG file in its directory, as LevelDB does, after
// renaming the previous LOG to LOG.old: what recovery drops and background
// errors are then on disk beside the data rather than discarded. If LOG
// cannot be created, the DB logs nowhere rather than fail to open.
func (db *DB) openInfoLog() {
	if db.opts.ReadOnly || !db.opts.defaultLogger {
		return
	}
	name := filename.Make(db.dir, filename.InfoLog, 0)
	if _, err := db.fs.Stat(name); err == nil {
		if err := db.fs.Rename(name, name+".old"); err != nil {
			return
		}
	}
	f, err := db.fs.Create(name)
	if err != nil {
		return
	}
	db.infoLog = f
	db.opts.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// closeInfoLog closes the LOG file, if the DB writes one.
func (db *DB) closeInfoLog() error {
	if db.infoLog == nil {
		return nil
	}
	f := db.infoLog
	db.infoLog = nil
	// A late line (a cleanup after Close) fails to write, unreported.
	return f.Close()
}
