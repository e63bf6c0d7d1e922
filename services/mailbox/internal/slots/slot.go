// Package slots is the mailbox's state: a queue per client and a slot per
// invocation, in RAM, behind one lock (DESIGN §3).
//
// RAM, for the seed's reason: an invocation in flight is a fact about this
// process for the seconds a tool takes to run, not a fact about the world.
// A restart forgets every handle, and the absent sentence says so.
//
// This file is what a slot IS; box.go is the map and the acts on it,
// read.go the reader claim and the lease, expire.go the sweeper.
package slots

import (
	"crypto/rand"
	"encoding/hex"
)

// Capture is a result as the mailbox keeps it.
type Capture struct {
	Stdout   string
	Stderr   string
	ExitCode int32
}

// Invocation is one hand-off, as a reader receives it.
type Invocation struct {
	ID    string
	Tool  string
	Input string
	// Cwd is nil when the driver set none.
	Cwd *string
	// Delivery counts hand-offs including this one.
	Delivery int32
}

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
	expires  int64 // unix nanoseconds
	handoffs int32
	state    state
	capture  *Capture
	done     chan struct{} // made on the first wait, closed on answer or removal

	q, e link // queue list, expiry list
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

// newID mints a handle: `inv-` and 128 random bits, unguessable, so holding
// a handle is the only way to name an invocation.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "inv-" + hex.EncodeToString(b[:])
}
