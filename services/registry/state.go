package registry

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/registry/internal/presented"
	"github.com/switchboard-run/switchboard/services/registry/internal/store"
	"github.com/switchboard-run/switchboard/services/registry/internal/toolset"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// DefaultWorkspace is where dev mode registers every client that
// advertises.
const DefaultWorkspace = "default"

// state is everything the registry knows, behind one mutex. Every change
// is written to the store and published to the watchers while the mutex
// is held, so the store, the maps and the watch stream see changes in one
// order.
//
// Stored tool protos are never modified after they are stored: readers
// hand them out without copying.
type state struct {
	// autoJoin, when set, is the workspace every advertising client joins
	// (dev mode).
	autoJoin string

	mu       sync.Mutex
	store    *store.Store
	hub      *watch.Hub
	closed   bool
	revision uint64
	adverts  map[string]*advert         // client → set in force (absent: none)
	seen     map[string]time.Time       // client → last_seen
	unsaved  map[string]bool            // clients whose last_seen is newer than the store's
	members  map[string]map[string]bool // workspace → its clients
	joined   map[string]map[string]bool // client → its workspaces
	present  map[string]*reads          // client → its open follow reads (absent: none)
	byName   map[string]presentedTool   // presented name → tool
}

// advert is one client's set in force.
type advert struct {
	tools   []*registryv1.Tool
	names   []string        // presented names, parallel to tools
	encoded []byte          // toolset.Encode(tools)
	schemas toolset.Schemas // the schema texts of tools, all of which compile
}

// presentedTool is what a presented name resolves to.
type presentedTool struct {
	client string
	tool   *registryv1.Tool
}

// reads is a client's presence: a refcount of open follow reads, and of
// the named sessions among them (the serving guard's key).
type reads struct {
	count    int
	sessions map[string]int
}

// newState loads the stored state. The reverse map of presented names is
// rebuilt from the stored sets: the names are a pure function of (client,
// tool), so they come back the same.
func newState(st *store.Store, hub *watch.Hub, autoJoin string) (*state, error) {
	loaded, err := st.Load()
	if err != nil {
		return nil, err
	}
	s := &state{
		autoJoin: autoJoin, store: st, hub: hub,
		adverts: map[string]*advert{}, seen: loaded.Seen, unsaved: map[string]bool{},
		members: map[string]map[string]bool{}, joined: map[string]map[string]bool{},
		present: map[string]*reads{}, byName: map[string]presentedTool{},
	}
	for client, encoded := range loaded.Adverts {
		tools, err := toolset.Decode(encoded)
		if err != nil {
			return nil, fmt.Errorf("reading the stored set of %q in %s: %w", client, st.Path(), err)
		}
		names := make([]string, len(tools))
		schemas := toolset.Schemas{}
		for i, t := range tools {
			names[i] = presented.Name(client, t.GetName())
			// Stored sets were checked when they were advertised.
			schemas[t.GetInputSchema()] = true
			if t.OutputSchema != nil {
				schemas[t.GetOutputSchema()] = true
			}
		}
		s.setAdvert(client, &advert{tools: tools, names: names, encoded: encoded, schemas: schemas})
	}
	for _, m := range loaded.Members {
		s.addMember(m)
	}
	return s, nil
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

// errClosed answers calls that arrive while the registry shuts down.
var errClosed = status.Error(codes.Unavailable, "the registry is shutting down; retry against the restarted registry")

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

func (s *state) addMember(m store.Membership) {
	if s.members[m.Workspace] == nil {
		s.members[m.Workspace] = map[string]bool{}
	}
	s.members[m.Workspace][m.Client] = true
	if s.joined[m.Client] == nil {
		s.joined[m.Client] = map[string]bool{}
	}
	s.joined[m.Client][m.Workspace] = true
}

func (s *state) removeMember(m store.Membership) {
	delete(s.members[m.Workspace], m.Client)
	if len(s.members[m.Workspace]) == 0 {
		delete(s.members, m.Workspace) // a workspace exists while it has members
	}
	delete(s.joined[m.Client], m.Workspace)
	if len(s.joined[m.Client]) == 0 {
		delete(s.joined, m.Client)
	}
}

// touch records that client was seen now; the store catches up with the
// next write of the client's set, or at Close.
func (s *state) touch(client string, now time.Time) {
	s.seen[client] = now
	s.unsaved[client] = true
}

// bump counts one change and returns the revision after it.
func (s *state) bump() uint64 {
	s.revision++
	return s.revision
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

// close stores the last_seen values not yet stored, ends every watcher and
// closes the store. Calls after it are answered with errClosed.
func (s *state) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.hub.Close()
	var flushErr error
	if len(s.unsaved) > 0 {
		flushErr = s.store.Update(func(tx *store.Tx) error {
			for client := range s.unsaved {
				if err := tx.PutSeen(client, s.seen[client]); err != nil {
					return err
				}
			}
			return nil
		})
		if flushErr != nil {
			flushErr = fmt.Errorf("storing last_seen of %d clients: %w", len(s.unsaved), flushErr)
		}
	}
	if err := s.store.Close(); err != nil && flushErr == nil {
		return fmt.Errorf("closing %s: %w", s.store.Path(), err)
	}
	return flushErr
}
