package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process has used: for
// a benchmark that runs its peers in process (a suite, a NATS server), a
// figure per call that other work on the machine does not inflate.
func ProcessCPU(t TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
