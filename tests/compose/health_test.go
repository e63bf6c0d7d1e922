package compose

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// healthTimer runs the healthchecks of project's containers where the
// engine does not: podman runs them from systemd timers, and a machine
// without systemd (a container, this kind of VM) has none, so a container
// would stay "starting" and compose would wait for ever. Like Docker, it
// checks a container every second until it is healthy (the files'
// start_interval), then every interval its healthcheck names. Elsewhere it
// does nothing. The returned func stops it.
func healthTimer(t *testing.T, eng testkit.Engine, project string) (stop func()) {
	if eng.CLI != "podman" {
		return func() {}
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		return func() {}
	}
	t.Logf("podman runs healthchecks from systemd timers and this machine has no systemd: the test runs them (podman healthcheck run)")
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		h := &healthchecks{last: map[string]time.Time{}, every: map[string]time.Duration{}, running: map[string]bool{}}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				h.wg.Wait()
				return
			case <-tick.C:
				h.round(project)
			}
		}
	})
	return func() {
		select {
		case <-done:
		default:
			close(done)
			wg.Wait()
		}
	}
}

// healthchecks is what the timer knows of each container, by id.
type healthchecks struct {
	mu      sync.Mutex
	last    map[string]time.Time     // when its check last began
	every   map[string]time.Duration // its healthcheck's interval; 0: it has none
	running map[string]bool          // a check of it is under way
	wg      sync.WaitGroup
}

// round starts the checks that are due, each in a goroutine of its own so
// that a slow one holds back no other.
func (h *healthchecks) round(project string) {
	out, err := exec.Command("podman", "ps", "--filter", "label=com.docker.compose.project="+project,
		"--format", "{{.ID}} {{.Status}}").Output()
	if err != nil {
		return // the next round tries again
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, status, _ := strings.Cut(line, " ")
		if id == "" {
			continue
		}
		h.mu.Lock()
		every, known := h.every[id]
		if !known {
			every = interval(id)
			h.every[id] = every
		}
		due := every > 0 && !h.running[id] &&
			(!strings.Contains(status, "(healthy)") || time.Since(h.last[id]) >= every)
		if due {
			h.running[id], h.last[id] = true, time.Now()
		}
		h.mu.Unlock()
		if due {
			h.wg.Go(func() {
				_ = exec.Command("podman", "healthcheck", "run", id).Run() // the outcome is the container's status
				h.mu.Lock()
				h.running[id] = false
				h.mu.Unlock()
			})
		}
	}
}

// interval is container id's healthcheck interval, 0 when it has none.
func interval(id string) time.Duration {
	out, err := exec.Command("podman", "inspect", "--format", "{{json .Config.Healthcheck}}", id).Output()
	if err != nil {
		return 0
	}
	var hc struct {
		Test     []string
		Interval time.Duration // nanoseconds, as the engine stores it
	}
	if json.Unmarshal(out, &hc) != nil || len(hc.Test) == 0 || hc.Test[0] == "NONE" {
		return 0
	}
	return max(hc.Interval, time.Second)
}
