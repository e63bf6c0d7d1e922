// Package slots keeps the mailbox's invocations in RAM, behind one lock: a
// queue per client and a slot per invocation (docs/design.md §3). It is the
// `--store mem` option — one replica, nothing survives a restart (the
// absent sentence says so), no NATS round trip on the hot path; the default
// store is package jsbox.
//
// This file is what a slot IS; box.go is the map and the acts on it,
// read.go the reader claim and the lease, expire.go the sweeper.
package slots

import (
	"time"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Capture is a result as the mailbox keeps it.
type Capture = inflight.Capture

type state uint8

const (
	queued   state = iota // on its client's pending list
	handed                // on its client's handed list: leased, no capture yet
	answered              // has a capture; waits to be collected
)

// slot is one invocation. It sits on at most one of its queue's lists (by
// state) and on the box's expiry list, both intrusive, so removal is O(1)
// and a collected slot is retained by nothing.
type slot struct {
	id       string
	client   string // the addressee: only it may complete
	poster   string // the driver: only it may collect or cancel
	tool     string
	input    string
	cwd      *string
	trace    map[string]string
	expires  int64         // unix nanoseconds
	timeout  time.Duration // the driver's, and when it runs out; zero: none
	deadline time.Time
	handoffs int32
	state    state
	capture  *Capture
	done     chan struct{} // made on the first wait, closed on answer or removal
	// notes are the latest progress reports (nil until the first), and
	// news is made by the first Status wait and closed on a note, the
	// answer or removal. cancelled marks a capture its poster's cancel
	// wrote, kept for Status (Cancel's keep).
	notes     []inflight.Note
	news      chan struct{}
	cancelled bool

	q, e link // queue list, expiry list
}

// wake closes the channels of whoever waits on s: for its answer (done,
// unless onlyNews) and for news.
func (s *slot) wake(onlyNews bool) {
	if s.done != nil && !onlyNews {
		close(s.done)
		s.done = nil
	}
	if s.news != nil {
		close(s.news)
		s.news = nil
	}
}

type link struct{ prev, next *slot }

// list is an intrusive doubly linked list over one of a slot's links.
type list struct {
	head, tail *slot
	n          int
	at         func(*slot) *link
}

func queueLinks(s *slot) *link  { return &s.q }
func expiryLinks(s *slot) *link { return &s.e }

func (l *list) pushBack(s *slot) {
	ln := l.at(s)
	ln.prev, ln.next = l.tail, nil
	if l.tail != nil {
		l.at(l.tail).next = s
	} else {
		l.head = s
	}
	l.tail = s
	l.n++
}

func (l *list) remove(s *slot) {
	ln := l.at(s)
	if ln.prev != nil {
		l.at(ln.prev).next = ln.next
	} else {
		l.head = ln.next
	}
	if ln.next != nil {
		l.at(ln.next).prev = ln.prev
	} else {
		l.tail = ln.prev
	}
	ln.prev, ln.next = nil, nil
	l.n--
}

func (l *list) popFront() *slot {
	s := l.head
	if s != nil {
		l.remove(s)
	}
	return s
}

// prepend moves every slot of front before l's, keeping front's order.
func (l *list) prepend(front *list) {
	if front.n == 0 {
		return
	}
	if l.head != nil {
		l.at(front.tail).next = l.head
		l.at(l.head).prev = front.tail
	} else {
		l.tail = front.tail
	}
	l.head = front.head
	l.n += front.n
	front.head, front.tail, front.n = nil, nil, 0
}
