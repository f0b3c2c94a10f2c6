package shale

// carryForward writes the records replayed at Open into log, the new WAL,
// and syncs it. createLog made its directory entry durable, so once this
// returns the records survive a power loss in the new log alone, and the
// MANIFEST may name it and the old logs be deleted. The old logs are never
// appended to: one may end in a torn write, which would hide what follows.
func (db *DB) carryForward(log *logFile, records [][]byte) error {
	for _, rec := range records {
		if err := log.append(rec); err != nil {
			return err
		}
	}
	return log.sync()
}
