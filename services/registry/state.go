package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
	"github.com/switchboard-run/switchboard/services/registry/internal/toolset"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// DefaultWorkspace is where dev mode registers every client that
// advertises.
const DefaultWorkspace = "default"

// state is this replica's view of the registry: the records bucket and the
// presence bucket, as their watches report them, behind one mutex. Every
// replica's view follows the same buckets in the same order, so any replica
// answers any call. Writes go to the bucket, and a call that wrote waits
// until its own view holds the write before it answers (read your writes).
//
// Stored tool protos are never modified once in the view: readers hand
// them out without copying.
type state struct {
	// autoJoin, when set, is the workspace every advertising client joins
	// (dev mode).
	autoJoin string
	records  *records.Records
	presence *presenceBucket
	hub      *watch.Hub
	log      *slog.Logger
	audit    *audit.Writer // the registry's own acts (audit.go)

	mu       sync.Mutex
	applied  uint64        // the records bucket's revision the view holds
	progress chan struct{} // closed and replaced whenever applied moves
	stalled  chan struct{} // a write waited staleAfter for the view: the watch is opened again (follow.go)
	closed   bool
	adverts  map[string]*advert                      // client → set in force (absent: none)
	seen     map[string]time.Time                    // client → last unchanged advertise, or read opened/closed
	members  map[string]map[string]bool              // workspace → its clients
	joined   map[string]map[string]bool              // client → its workspaces
	present  map[string]*presence.Read               // client → its read (absent: none)
	byName   map[string]presentedTool                // presented name → tool
	tokens   map[string]*registryv1.Token            // hash hex → record
	grants   map[string]*grant                       // identity → its grant record
	groups   map[string]map[string]*registryv1.Group // workspace → name → tool group
	pinSets  map[string]map[string]*pinSet           // workspace → client → its stored pins
	policies map[string]registryv1.PinPolicy         // workspace → pin policy (absent: hold)
	audits   map[string]*registryv1.AuditPolicy      // workspace → audit policy (absent: metadata only)
	// pinned are the tools whose state against their pin is not
	// PIN_STATE_PINNED: workspace → client → tool → pin with its state.
	pinned map[string]map[string]map[string]*registryv1.Pin
	// toolIndexes are workspaces' tools sorted for ListTools, kept while
	// the revision stands (toolindex.go).
	toolIndexes map[string]*toolIndex
}

// grant is one grant record with the workspaces it names, read once.
type grant struct {
	record *registryv1.Grant
	sees   identity.Workspaces
}

// advert is one client's set in force.
type advert struct {
	tools   []*registryv1.Tool
	names   []string        // presented names, parallel to tools
	encoded []byte          // toolset.Encode(tools)
	schemas toolset.Schemas // the schema texts of tools, all of which compile
	fps     []string        // pins.Fingerprint of each tool, parallel to tools
	rev     uint64          // the bucket revision that stored it
	at      time.Time       // when it was stored
}

// presentedTool is what a presented name resolves to.
type presentedTool struct {
	client string
	tool   *registryv1.Tool
}

func newState(rec *records.Records, pres *presenceBucket, hub *watch.Hub, autoJoin string, log *slog.Logger) *state {
	return &state{
		autoJoin: autoJoin, records: rec, presence: pres, hub: hub, log: log,
		progress: make(chan struct{}), stalled: make(chan struct{}, 1),
		adverts: map[string]*advert{}, seen: map[string]time.Time{},
		members: map[string]map[string]bool{}, joined: map[string]map[string]bool{},
		present: map[string]*presence.Read{}, byName: map[string]presentedTool{},
		tokens: map[string]*registryv1.Token{}, grants: map[string]*grant{}, groups: map[string]map[string]*registryv1.Group{}, toolIndexes: map[string]*toolIndex{},
		pinSets: map[string]map[string]*pinSet{}, policies: map[string]registryv1.PinPolicy{}, audits: map[string]*registryv1.AuditPolicy{}, pinned: map[string]map[string]map[string]*registryv1.Pin{},
	}
}

// errClosed answers calls that arrive while the registry shuts down.
var errClosed = status.Error(codes.Unavailable, "the registry is shutting down; retry against another replica or the restarted registry")

// storeFailed is the refusal when the bucket could not be written.
func storeFailed(act string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	if errors.Is(err, natsconn.ErrNoAnswer) {
		// A write NATS did not acknowledge in time may still have been
		// stored: the caller must not be told that nothing changed.
		return status.Errorf(codes.Unavailable, "%s: the registry cannot reach NATS right now (%v), so it cannot say whether this was stored; try again in a moment", act, err)
	}
	return status.Errorf(codes.Unavailable, "%s: the registry cannot reach NATS right now (%v), so nothing changed; try again in a moment", act, err)
}

// waitApplied waits until the view holds revision rev of the records
// bucket, so a caller that wrote reads its own write on this replica.
func (s *state) waitApplied(ctx context.Context, rev uint64) error {
	stale := time.NewTimer(staleAfter)
	defer stale.Stop()
	s.mu.Lock()
	seen := s.applied
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if s.applied >= rev {
			s.mu.Unlock()
			return nil
		}
		if s.closed {
			s.mu.Unlock()
			return errClosed
		}
		progress := s.progress
		s.mu.Unlock()
		select {
		case <-progress:
		case <-stale.C:
			s.mu.Lock()
			moved := s.applied > seen
			seen = s.applied
			s.mu.Unlock()
			if moved { // slow, not stalled: wait again
				stale.Reset(staleAfter)
				continue
			}
			select { // one kick is enough, however many writes wait
			case s.stalled <- struct{}{}:
			default:
			}
		case <-ctx.Done():
			return status.Errorf(codes.Unavailable, "the write is stored, but this registry's view did not reach it in time: %v", ctx.Err())
		}
	}
}

// catchUp waits until the view holds everything the bucket holds now: after
// a write refused because the bucket moved on, the view is behind.
func (s *state) catchUp(ctx context.Context) error {
	rev, err := s.records.Latest(ctx)
	if err != nil {
		return storeFailed("reading the registry's revision", err)
	}
	return s.waitApplied(ctx, rev)
}

// setApplied moves the view's revision on and wakes the waiters. Call with
// s.mu held.
func (s *state) setApplied(rev uint64) {
	if rev <= s.applied {
		return
	}
	s.applied = rev
	close(s.progress)
	s.progress = make(chan struct{})
}

// schemasOf returns the schema texts of client's set in force (nil when it
// has none). The map is never modified, so the caller reads it unlocked.
func (s *state) schemasOf(client string) toolset.Schemas {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.adverts[client]; a != nil {
		return a.schemas
	}
	return nil
}

// setAdvert puts a set in force (nil withdraws), keeping byName in step.
func (s *state) setAdvert(client string, a *advert) {
	if old := s.adverts[client]; old != nil {
		for _, n := range old.names {
			delete(s.byName, n)
		}
	}
	if a == nil || len(a.tools) == 0 {
		delete(s.adverts, client)
		return
	}
	s.adverts[client] = a
	for i, n := range a.names {
		s.byName[n] = presentedTool{client: client, tool: a.tools[i]}
	}
}

func (s *state) addMember(m records.Member) bool {
	if s.members[m.Workspace][m.Client] {
		return false
	}
	if s.members[m.Workspace] == nil {
		s.members[m.Workspace] = map[string]bool{}
	}
	s.members[m.Workspace][m.Client] = true
	if s.joined[m.Client] == nil {
		s.joined[m.Client] = map[string]bool{}
	}
	s.joined[m.Client][m.Workspace] = true
	return true
}

func (s *state) removeMember(m records.Member) bool {
	if !s.members[m.Workspace][m.Client] {
		return false
	}
	delete(s.members[m.Workspace], m.Client)
	if len(s.members[m.Workspace]) == 0 {
		delete(s.members, m.Workspace) // a workspace exists while it has members
	}
	delete(s.joined[m.Client], m.Workspace)
	if len(s.joined[m.Client]) == 0 {
		delete(s.joined, m.Client)
	}
	return true
}

// lastSeen is when client last advertised, or opened or closed a read.
// Call with s.mu held.
func (s *state) lastSeen(client string) (time.Time, bool) {
	t, ok := s.seen[client]
	if a := s.adverts[client]; a != nil && a.at.After(t) {
		t, ok = a.at, true
	}
	if r := s.present[client]; r != nil && r.Opened.After(t) {
		t, ok = r.Opened, true
	}
	return t, ok
}

// touch records client as seen at t, if that is later. Call with s.mu held.
func (s *state) touch(client string, t time.Time) {
	if t.After(s.seen[client]) {
		s.seen[client] = t
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// close ends every watcher and refuses later calls.
func (s *state) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.progress)
	s.progress = make(chan struct{})
	s.hub.Close()
}

func decodeAdvert(client string, encoded []byte) (*advert, error) {
	tools, err := toolset.Decode(encoded)
	if err != nil {
		return nil, fmt.Errorf("the stored set of %q: %w", client, err)
	}
	a := &advert{tools: tools, names: make([]string, len(tools)), fps: make([]string, len(tools)), encoded: encoded, schemas: toolset.Schemas{}}
	for i, t := range tools {
		a.names[i] = names.Presented(client, t.GetName())
		a.fps[i] = pins.Fingerprint(t)
		// Stored sets were checked when they were advertised.
		a.schemas[t.GetInputSchema()] = true
		if t.OutputSchema != nil {
			a.schemas[t.GetOutputSchema()] = true
		}
	}
	return a, nil
}
