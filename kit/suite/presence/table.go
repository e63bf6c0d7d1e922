package presence

import "time"

// Table joins the reads with their replicas' heartbeats, as a watcher hears
// them: a client is present while its read is open on a live replica.
type Table struct {
	reads map[string]*Read
	alive map[string]bool
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{reads: map[string]*Read{}, alive: map[string]bool{}} }

// Change is a client's presence after an event, and when it was last seen.
type Change struct {
	Client  string
	Present *Read // nil: absent
	Seen    time.Time
}

// Apply applies e and returns the clients it concerns.
func (t *Table) Apply(e Event) []Change {
	if e.Client != "" {
		if e.Read == nil {
			delete(t.reads, e.Client)
		} else {
			t.reads[e.Client] = e.Read
		}
		seen := e.At
		if e.Read != nil {
			seen = e.Read.Seen()
		}
		return []Change{{Client: e.Client, Present: t.Present(e.Client), Seen: seen}}
	}
	if e.Alive {
		t.alive[e.Replica] = true
	} else {
		delete(t.alive, e.Replica)
	}
	var out []Change
	for client, r := range t.reads {
		if r.Replica == e.Replica && r.Held {
			seen := r.Opened
			if !e.Alive {
				seen = e.At // last heard of when its replica died
			}
			out = append(out, Change{Client: client, Present: t.Present(client), Seen: seen})
		}
	}
	return out
}

// Present returns client's read when it is open on a live replica.
func (t *Table) Present(client string) *Read {
	if r := t.reads[client]; r != nil && r.Held && t.alive[r.Replica] {
		return r
	}
	return nil
}

// All returns every client's presence as the table stands.
func (t *Table) All() []Change {
	out := make([]Change, 0, len(t.reads))
	for client, r := range t.reads {
		out = append(out, Change{Client: client, Present: t.Present(client), Seen: r.Seen()})
	}
	return out
}
