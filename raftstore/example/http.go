package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

// applyTimeout bounds how long a write waits to be committed.
const applyTimeout = 10 * time.Second

// handler serves the node's HTTP API:
//
//	PUT    /kv/{key}  body: the value   write through raft (leader only)
//	DELETE /kv/{key}                    delete through raft (leader only)
//	GET    /kv/{key}                    read this node's state machine
//	GET    /status                      JSON: id, state, leader, indexes
//	GET    /dump                        JSON: applied index and every key
//	POST   /join?id=ID&addr=RAFTADDR    add a voter (leader only)
//
// A write sent to a follower is answered 421 Misdirected Request with the
// leader's ID in the X-Raft-Leader header; the client retries there. A
// write answered 200 is committed by a majority and applied on the leader.
func (n *node) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /kv/{key}", n.handleWrite(opPut))
	mux.HandleFunc("DELETE /kv/{key}", n.handleWrite(opDelete))
	mux.HandleFunc("GET /kv/{key}", n.handleGet)
	mux.HandleFunc("GET /status", n.handleStatus)
	mux.HandleFunc("GET /dump", n.handleDump)
	mux.HandleFunc("POST /join", n.handleJoin)
	return mux
}

// notLeader answers a request only the leader can serve.
func (n *node) notLeader(w http.ResponseWriter) bool {
	if n.raft.State() == raft.Leader {
		return false
	}
	_, id := n.raft.LeaderWithID()
	w.Header().Set("X-Raft-Leader", string(id))
	http.Error(w, fmt.Sprintf("not the leader; the leader is %q", id), http.StatusMisdirectedRequest)
	return true
}

func (n *node) handleWrite(op byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if n.notLeader(w) {
			return
		}
		var value []byte
		if op == opPut {
			var err error
			if value, err = io.ReadAll(io.LimitReader(r.Body, 1<<20)); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		f := n.raft.Apply(encodeCommand(op, []byte(r.PathValue("key")), value), applyTimeout)
		if err := f.Error(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err, _ := f.Response().(error); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "ok %d\n", f.Index())
	}
}

func (n *node) handleGet(w http.ResponseWriter, r *http.Request) {
	v, err := n.fsm.db.Get(dataKey([]byte(r.PathValue("key"))))
	if errors.Is(err, shale.ErrNotFound) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(v)
}

// status is the JSON of GET /status.
type status struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Leader    string `json:"leader"`
	Term      uint64 `json:"term"`
	Applied   uint64 `json:"applied"` // the FSM's applied index
	LastIndex uint64 `json:"last_index"`
	FirstLog  uint64 `json:"first_log"` // the raftstore's FirstIndex
}

func (n *node) handleStatus(w http.ResponseWriter, r *http.Request) {
	_, leader := n.raft.LeaderWithID()
	first, _ := n.store.FirstIndex()
	writeJSON(w, status{
		ID: n.id, State: n.raft.State().String(), Leader: string(leader),
		Term: n.raft.CurrentTerm(), Applied: n.fsm.applied.Load(),
		LastIndex: n.raft.LastIndex(), FirstLog: first,
	})
}

// dump is the JSON of GET /dump: a consistent view of the state machine.
type dump struct {
	Applied uint64            `json:"applied"`
	Data    map[string]string `json:"data"`
}

func (n *node) handleDump(w http.ResponseWriter, r *http.Request) {
	snap := n.fsm.db.NewSnapshot()
	defer snap.Close()
	d := dump{Data: map[string]string{}}
	if v, err := snap.Get(appliedKey); err == nil && len(v) == 8 {
		d.Applied = binary.BigEndian.Uint64(v)
	}
	for e, err := range snap.All(shale.PrefixOptions(dataPrefix)) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		d.Data[string(e.Key[len(dataPrefix):])] = string(e.Value)
	}
	writeJSON(w, d)
}

func (n *node) handleJoin(w http.ResponseWriter, r *http.Request) {
	if n.notLeader(w) {
		return
	}
	id, addr := r.URL.Query().Get("id"), r.URL.Query().Get("addr")
	if id == "" || addr == "" {
		http.Error(w, "id and addr are required", http.StatusBadRequest)
		return
	}
	err := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, applyTimeout).Error()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// joinCluster asks the member at httpAddr to add this node, retrying for
// a minute while the member is not (yet) the leader or not reachable.
func joinCluster(httpAddr, id, raftAddr string) error {
	u := fmt.Sprintf("http://%s/join?id=%s&addr=%s", httpAddr, url.QueryEscape(id), url.QueryEscape(raftAddr))
	client := &http.Client{Timeout: applyTimeout + 5*time.Second}
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		resp, err := client.Post(u, "text/plain", nil)
		if err != nil {
			last = err
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = errors.Newf("%s: %s", resp.Status, body)
	}
	return last
}
