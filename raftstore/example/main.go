// Command example is a small replicated key-value service: each process is
// one node of a hashicorp/raft cluster whose log and stable state live in a
// raftstore.Store, and whose state machine is a shale database. See
// README.md for how to start a cluster of three and put and get through it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/shale-db/shale/raftstore"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is what the flags set.
type config struct {
	id, dir, raftAddr, httpAddr, join string
	bootstrap                         bool
	timeout                           time.Duration
	snapshotThreshold, trailingLogs   uint64
	snapshotInterval                  time.Duration
	logLevel                          string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.id, "id", "", "this node's raft server ID (required)")
	fs.StringVar(&c.dir, "dir", "", "this node's data directory (required)")
	fs.StringVar(&c.raftAddr, "raft", "127.0.0.1:0", "raft TCP address to bind on first start (port 0: chosen by the OS, then kept in DIR/raft-addr)")
	fs.StringVar(&c.httpAddr, "http", "127.0.0.1:0", "HTTP API address (port 0: chosen by the OS)")
	fs.BoolVar(&c.bootstrap, "bootstrap", false, "bootstrap a new cluster with this node as its only voter")
	fs.StringVar(&c.join, "join", "", "HTTP address of a cluster member to join through")
	fs.DurationVar(&c.timeout, "raft-timeout", time.Second, "raft heartbeat and election timeout")
	fs.Uint64Var(&c.snapshotThreshold, "snapshot-threshold", 8192, "raft SnapshotThreshold")
	fs.Uint64Var(&c.trailingLogs, "trailing-logs", 10240, "raft TrailingLogs")
	fs.DurationVar(&c.snapshotInterval, "snapshot-interval", 120*time.Second, "raft SnapshotInterval")
	fs.StringVar(&c.logLevel, "log-level", "info", "raft log level (trace, debug, info, warn, error)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.id == "" || c.dir == "" {
		return c, errors.New("-id and -dir are required")
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	n, err := startNode(c, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "start: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", c.httpAddr)
	if err != nil {
		fmt.Fprintf(stderr, "listen: %v\n", err)
		n.close()
		return 1
	}
	srv := &http.Server{Handler: n.handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	// The first line on stdout tells a supervisor (or the test) where the
	// node listens.
	fmt.Fprintf(stdout, "ready id=%s raft=%s http=%s\n", c.id, n.trans.LocalAddr(), ln.Addr())
	if c.join != "" && !n.hadState {
		if err := joinCluster(c.join, c.id, string(n.trans.LocalAddr())); err != nil {
			fmt.Fprintf(stderr, "join: %v\n", err)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if err := n.close(); err != nil {
		fmt.Fprintf(stderr, "close: %v\n", err)
		return 1
	}
	return 0
}

// node is one running member of the cluster.
type node struct {
	id       string
	raft     *raft.Raft
	fsm      *kvFSM
	store    *raftstore.Store
	trans    *raft.NetworkTransport
	hadState bool
}

// startNode opens the node's stores and starts raft. Directory layout:
// DIR/raft (the raftstore), DIR/fsm (the state machine's database),
// DIR/snapshots, DIR/raft-addr (the raft address, kept across restarts
// because the cluster's configuration names it).
func startNode(c config, logOut io.Writer) (_ *node, err error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	n := &node{id: c.id}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	if n.store, err = raftstore.New(filepath.Join(c.dir, "raft"), nil); err != nil {
		return nil, err
	}
	if n.fsm, err = openFSM(filepath.Join(c.dir, "fsm")); err != nil {
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStore(c.dir, 2, logOut)
	if err != nil {
		return nil, err
	}
	if n.trans, err = newTransport(c, logOut); err != nil {
		return nil, err
	}
	if n.hadState, err = raft.HasExistingState(n.store, n.store, snaps); err != nil {
		return nil, err
	}
	rc, err := raftConfig(c, n.fsm, snaps, logOut)
	if err != nil {
		return nil, err
	}
	if n.raft, err = raft.NewRaft(rc, n.fsm, n.store, n.store, snaps, n.trans); err != nil {
		return nil, err
	}
	if c.bootstrap && !n.hadState {
		cfg := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: n.trans.LocalAddr()}}}
		if err := n.raft.BootstrapCluster(cfg).Error(); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// raftConfig is raft's configuration for the node. The FSM keeps its own
// state, so raft restores a snapshot at start only if the FSM's applied
// index is behind the newest snapshot (a restore cut short by a crash).
func raftConfig(c config, fsm *kvFSM, snaps *raft.FileSnapshotStore, logOut io.Writer) (*raft.Config, error) {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.id)
	rc.HeartbeatTimeout = c.timeout
	rc.ElectionTimeout = c.timeout
	rc.LeaderLeaseTimeout = c.timeout / 2
	rc.SnapshotThreshold = c.snapshotThreshold
	rc.TrailingLogs = c.trailingLogs
	rc.SnapshotInterval = c.snapshotInterval
	rc.Logger = hclog.New(&hclog.LoggerOptions{
		Name: "raft-" + c.id, Output: logOut, Level: hclog.LevelFromString(c.logLevel),
	})
	metas, err := snaps.List()
	if err != nil {
		return nil, err
	}
	rc.NoSnapshotRestoreOnStart = len(metas) == 0 || fsm.applied.Load() >= metas[0].Index
	return rc, raft.ValidateConfig(rc)
}

// newTransport binds raft's TCP transport: on the address in
// DIR/raft-addr if there is one, else on c.raftAddr, whose actual address
// (the OS's choice for port 0) is then saved there.
func newTransport(c config, logOut io.Writer) (*raft.NetworkTransport, error) {
	path := filepath.Join(c.dir, "raft-addr")
	addr := c.raftAddr
	saved, err := os.ReadFile(path)
	if err == nil {
		addr = string(saved)
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	trans, err := raft.NewTCPTransport(addr, nil, 3, 10*time.Second, logOut)
	if err != nil {
		return nil, err
	}
	if saved == nil {
		if err := writeFileSync(path, []byte(trans.LocalAddr())); err != nil {
			trans.Close()
			return nil, err
		}
	}
	return trans, nil
}

// writeFileSync writes a file durably: temporary file, fsync, rename,
// fsync of the directory.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	err = errors.CombineErrors(err, f.Sync())
	err = errors.CombineErrors(err, f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	return errors.CombineErrors(d.Sync(), d.Close())
}

func (n *node) close() error {
	var err error
	if n.raft != nil {
		err = n.raft.Shutdown().Error()
	}
	if n.trans != nil {
		err = errors.CombineErrors(err, n.trans.Close())
	}
	if n.store != nil {
		err = errors.CombineErrors(err, n.store.Close())
	}
	if n.fsm != nil {
		err = errors.CombineErrors(err, n.fsm.db.Close())
	}
	return err
}
