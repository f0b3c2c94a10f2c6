package main

import "github.com/shale-db/shale"

var deleteCmd = &command{
	name:    "delete",
	args:    "KEY",
	summary: "delete KEY (no error if it has no value)",
	detail: `Deletes KEY, durably (synced to disk before delete returns). Deleting a
key that has no value succeeds and writes a deletion all the same. A
directory without a database is an error: delete creates none.`,
	run: runDelete,
}

func runDelete(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	rest, err := e.parse(c, fs, args, 1, 1)
	if err != nil {
		return err
	}
	key, err := e.arg("key", rest[0])
	if err != nil {
		return err
	}
	db, err := e.openExisting()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	if err := db.Delete(key, shale.Sync); err != nil {
		return failure(err)
	}
	return nil
}
