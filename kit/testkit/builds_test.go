package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The build directories of ended test processes are removed by the next
// one; a live process's stay, and so does one of no pid until it is an
// hour old.
func TestTheBuildsOfEndedProcessesAreSwept(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, age time.Duration) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dead := mk(fmt.Sprintf("%s%d-1", buildDirPrefix, ended.Process.Pid), 0)
	mine := mk(fmt.Sprintf("%s%d-2", buildDirPrefix, os.Getpid()), 2*time.Hour)
	oldNoPid := mk(buildDirPrefix+"123abc", 2*time.Hour)
	newNoPid := mk(buildDirPrefix+"456def", time.Minute)
	other := mk("someone-elses", 2*time.Hour)
	sweepDeadBuilds()
	for dir, want := range map[string]bool{dead: false, mine: true, oldNoPid: false, newNoPid: true, other: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: kept %v; want %v", filepath.Base(dir), err == nil, want)
		}
	}
}
