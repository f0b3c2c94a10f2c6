package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the node binary: with nodeEnv set it runs
// one node with the arguments in that variable (separated by newlines).
const nodeEnv = "RAFTSTORE_EXAMPLE_NODE"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(nodeEnv); ok {
		os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// proc is one node process of a test cluster.
type proc struct {
	id, dir, logPath string
	args             []string // for restarts: no -bootstrap, no -join
	cmd              *exec.Cmd
	http             string // changes at every start; guarded by cluster.mu
}

// start runs the node, waits for its "ready" line and returns its HTTP
// address.
func (p *proc) start(t *testing.T, extra ...string) string {
	t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), nodeEnv+"="+strings.Join(append(p.args, extra...), "\n"))
	p.cmd.Stderr = logf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
		io.Copy(io.Discard, out)
	}()
	select {
	case line, ok := <-ready:
		_, addr, found := strings.Cut(line, " http=")
		if !ok || !found {
			t.Fatalf("node %s did not start (see %s)", p.id, p.logPath)
		}
		return addr
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s: no ready line in 30s (see %s)", p.id, p.logPath)
	}
	return ""
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func getJSON(addr, path string, v any) error {
	resp, err := httpClient.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// put writes key=value through the node at addr; nil means acknowledged.
func put(addr, key, value string) error {
	req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/kv/"+key, strings.NewReader(value))
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// cluster is three node processes and what the test saw of them.
type cluster struct {
	t     *testing.T
	mu    sync.Mutex // guards the procs' http addresses
	procs []*proc
}

func startCluster(t *testing.T, raftFlags []string) *cluster {
	c := &cluster{t: t}
	base := t.TempDir()
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
		p := &proc{id: id, dir: filepath.Join(base, id), logPath: filepath.Join(base, id+".log")}
		p.args = append([]string{"-id", id, "-dir", p.dir}, raftFlags...)
		c.procs = append(c.procs, p)
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range c.procs {
				if b, err := os.ReadFile(p.logPath); err == nil {
					t.Logf("---- %s log (tail) ----\n%s", p.id, tail(string(b), 4000))
				}
			}
		}
	})
	c.procs[0].http = c.procs[0].start(t, "-bootstrap")
	c.waitLeader(30 * time.Second)
	for _, p := range c.procs[1:] {
		p.http = p.start(t, "-join", c.procs[0].http)
	}
	c.waitMembers(3, 60*time.Second)
	return c
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// addrs returns the nodes' current HTTP addresses.
func (c *cluster) addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var a []string
	for _, p := range c.procs {
		a = append(a, p.http)
	}
	return a
}

// leader returns the index of the node that says it leads, or -1.
func (c *cluster) leader() int {
	for i, a := range c.addrs() {
		var st status
		if getJSON(a, "/status", &st) == nil && st.State == "Leader" {
			return i
		}
	}
	return -1
}

func (c *cluster) waitLeader(d time.Duration) int {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if i := c.leader(); i >= 0 {
			return i
		}
	}
	c.t.Fatalf("no leader within %v", d)
	return -1
}

// waitMembers waits until a write through the leader commits with n
// nodes applying it.
func (c *cluster) waitMembers(n int, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		l := c.leader()
		if l < 0 || put(c.addrs()[l], "probe", "x") != nil {
			continue
		}
		count := 0
		for _, a := range c.addrs() {
			var st status
			if getJSON(a, "/status", &st) == nil && st.Applied > 0 && st.Leader != "" {
				count++
			}
		}
		if count >= n {
			return
		}
	}
	c.t.Fatalf("%d nodes not all up within %v", n, d)
}

// restart SIGKILLs node i and starts it again on its directory.
func (c *cluster) restart(i int, down time.Duration) {
	p := c.procs[i]
	p.kill()
	time.Sleep(down)
	addr := p.start(c.t)
	c.mu.Lock()
	p.http = addr
	c.mu.Unlock()
}

// writer puts unique keys through the leader until stop closes, and
// records those acknowledged.
type writer struct {
	id    int
	acked map[string]string
	tries int
}

func (w *writer) run(c *cluster, stop <-chan struct{}) {
	target := 0
	for seq := 0; ; seq++ {
		key := fmt.Sprintf("w%d-%06d", w.id, seq)
		value := strconv.Itoa(seq * 7919)
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.tries++
			addrs := c.addrs()
			if err := put(addrs[target%len(addrs)], key, value); err == nil {
				w.acked[key] = value
				break
			}
			target++ // not the leader, or down: try the next node
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func soakKills() int {
	n, err := strconv.Atoi(os.Getenv("RAFTSTORE_SOAK"))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// TestKillUnderLoad runs a three-node cluster, writes through the leader
// from four clients, and meanwhile SIGKILLs and restarts nodes, leaders
// included. At the end every acknowledged write is on every node and the
// nodes' states are equal. RAFTSTORE_SOAK=N kills N times instead of 6.
func TestKillUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-process cluster")
	}
	kills := 6
	if n := soakKills(); n > 0 {
		kills = n
	}
	c := startCluster(t, []string{
		"-raft-timeout", "1s", "-log-level", "info",
		// Small numbers so that snapshots are taken, logs truncated, and
		// restarted nodes are sent snapshots.
		"-snapshot-threshold", "256", "-trailing-logs", "128", "-snapshot-interval", "1s",
	})
	stop := make(chan struct{})
	writers := make([]*writer, 4)
	var wg sync.WaitGroup
	for i := range writers {
		writers[i] = &writer{id: i, acked: map[string]string{}}
		wg.Add(1)
		go func() { defer wg.Done(); writers[i].run(c, stop) }()
	}
	var leaderChanges atomic.Int64
	monitorDone := make(chan struct{})
	go c.monitorLeader(stop, &leaderChanges, monitorDone)

	leaderKills := 0
	for k := 0; k < kills; k++ {
		time.Sleep(2 * time.Second)
		// Even kills take the leader; odd ones another node, down long
		// enough for the leader to cut its log past it, so that it
		// catches up from a snapshot.
		victim, down := (k+1)%3, 3*time.Second
		if k%2 == 0 {
			victim, down = c.waitLeader(30*time.Second), 500*time.Millisecond
			leaderKills++
		}
		c.restart(victim, down)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	<-monitorDone

	acked := map[string]string{}
	tries := 0
	for _, w := range writers {
		tries += w.tries
		for k, v := range w.acked {
			acked[k] = v
		}
	}
	states := c.converge(60 * time.Second)
	for i, st := range states {
		for k, v := range acked {
			if got, ok := st.Data[k]; !ok || got != v {
				t.Fatalf("node n%d: acknowledged %s=%s, has %q (present %v)", i+1, k, v, got, ok)
			}
		}
	}
	t.Logf("acknowledged writes %d (attempts %d), kills %d (of the leader %d), leader changes seen %d, "+
		"snapshots installed on followers %d, lost 0",
		len(acked), tries, kills, leaderKills, leaderChanges.Load(), c.countLogLines("Installed remote snapshot"))
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
}

// countLogLines counts the nodes' log lines that contain s.
func (c *cluster) countLogLines(s string) int {
	n := 0
	for _, p := range c.procs {
		b, _ := os.ReadFile(p.logPath)
		n += strings.Count(string(b), s)
	}
	return n
}

// monitorLeader counts the changes of leader it observes.
func (c *cluster) monitorLeader(stop <-chan struct{}, changes *atomic.Int64, done chan<- struct{}) {
	defer close(done)
	last := ""
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		for _, a := range c.addrs() {
			var st status
			if getJSON(a, "/status", &st) == nil && st.State == "Leader" {
				if last != "" && st.ID+"@"+strconv.FormatUint(st.Term, 10) != last {
					changes.Add(1)
				}
				last = st.ID + "@" + strconv.FormatUint(st.Term, 10)
				break
			}
		}
	}
}

// converge writes a last key through the leader, waits until every node
// has applied it and all report the same applied index, and returns the
// nodes' dumps, which must be equal.
func (c *cluster) converge(d time.Duration) []dump {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		l := c.leader()
		if l < 0 || put(c.addrs()[l], "final", "1") != nil {
			continue
		}
		for time.Now().Before(deadline) {
			states, ok := c.dumps()
			if ok && equalStates(states) && states[0].Data["final"] == "1" {
				return states
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	states, _ := c.dumps()
	for i, st := range states {
		c.t.Logf("n%d: applied %d, %d keys", i+1, st.Applied, len(st.Data))
	}
	c.t.Fatalf("the nodes did not converge within %v", d)
	return nil
}

func (c *cluster) dumps() ([]dump, bool) {
	var states []dump
	for _, a := range c.addrs() {
		var st dump
		if err := getJSON(a, "/dump", &st); err != nil {
			return nil, false
		}
		states = append(states, st)
	}
	return states, true
}

func equalStates(states []dump) bool {
	for _, st := range states[1:] {
		if st.Applied != states[0].Applied || len(st.Data) != len(states[0].Data) {
			return false
		}
		for k, v := range states[0].Data {
			if st.Data[k] != v {
				return false
			}
		}
	}
	return true
}
