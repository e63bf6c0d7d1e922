package testkit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
)

// Session runs f outside `go test` (the bench does) with a TB that behaves
// as a test's: Fatal and Fatalf end f and become Session's error, Logf
// writes a line to stderr, and the cleanups run once f has ended, the last
// registered first. An error f returns fails the session too, so cleanups
// that report on failure (Start's) do.
func Session(f func(t TB) error) error {
	s := &session{}
	done := make(chan struct{})
	go func() {
		defer close(done) // also when Fatal ends the goroutine
		if err := f(s); err != nil {
			s.setFailure(err)
		}
	}()
	<-done
	s.mu.Lock()
	cleanups := s.cleanups
	s.mu.Unlock()
	for _, c := range slices.Backward(cleanups) {
		c()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

type session struct {
	mu       sync.Mutex
	failure  error
	cleanups []func()
}

func (s *session) Helper() {}

func (s *session) Fatal(args ...any) {
	s.setFailure(errors.New(fmt.Sprint(args...)))
	runtime.Goexit()
}

func (s *session) Fatalf(format string, args ...any) {
	s.setFailure(fmt.Errorf(format, args...))
	runtime.Goexit()
}

func (s *session) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (s *session) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *session) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure != nil
}

// setFailure keeps the first failure.
func (s *session) setFailure(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == nil {
		s.failure = err
	}
}
