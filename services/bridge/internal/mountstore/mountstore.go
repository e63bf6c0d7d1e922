// Package mountstore keeps the bridge's mounts in NATS, so that every
// bridge replica runs the same servers and a restarted bridge finds them
// again (docs/architecture.md, "Where state lives").
//
// Two buckets:
//
//   - sb_mounts: mount.<client> holds the MountRequest (protobuf), kept
//     until it is unmounted.
//   - sb_mount_leases: lease.<client> names the replica running an
//     exclusive mount; replica.<name> lists what a replica runs. The bucket
//     keeps a key LeaseTTL past its last write (its MaxAge), so a key whose
//     replica died lapses by itself. A lease is taken with Create (refused
//     while it exists) and renewed with Update at the revision its holder
//     last wrote: compare-and-set, no election of our own.
package mountstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
)

// Buckets of the bridge.
const (
	Bucket      = "sb_mounts"
	LeaseBucket = "sb_mount_leases"
)

// LeaseTTL is how long a lease (and a replica's list of what it runs)
// outlives the last word from its replica. It is the bucket's MaxAge, the
// same for every replica, so it is not a flag: replicas that disagreed
// would rewrite the bucket's limits at each start.
const LeaseTTL = 5 * time.Second

// maxMountBytes bounds one stored mount; a gRPC request is bounded at
// 4 MiB, a NATS message at max_payload.
const maxMountBytes = 1 << 20

const (
	mountPrefix   = "mount."
	leasePrefix   = "lease."
	replicaPrefix = "replica."
)

// ErrHeld says another replica holds the lease.
var ErrHeld = errors.New("another bridge replica holds this mount's lease")

// Store is the two buckets.
type Store struct {
	mounts, leases jetstream.KeyValue
}

// Open declares the buckets (creating them when missing) with replicas
// copies each.
func Open(ctx context.Context, js jetstream.JetStream, replicas int) (*Store, error) {
	mounts, err := streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:       Bucket,
		Description:  "Switchboard's bridge mounts: the MCP servers and plugin backends every bridge replica runs",
		Storage:      jetstream.FileStorage,
		Replicas:     replicas,
		MaxValueSize: maxMountBytes,
	})
	if err != nil {
		return nil, err
	}
	leases, err := streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      LeaseBucket,
		Description: "Switchboard's bridge leases: which replica runs each exclusive mount, and what each replica runs",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		TTL:         LeaseTTL,
	})
	if err != nil {
		return nil, err
	}
	return &Store{mounts: mounts, leases: leases}, nil
}

// Put stores client's mount and returns its revision.
func (s *Store) Put(ctx context.Context, client string, cfg *bridgev1.ServerConfig) (uint64, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(&bridgev1.MountRequest{Client: client, Config: cfg})
	if err != nil {
		return 0, fmt.Errorf("encoding the mount of %q: %w", client, err)
	}
	if len(data) > maxMountBytes {
		return 0, fmt.Errorf("the mount of %q is %d bytes, more than the %d a stored mount may be", client, len(data), maxMountBytes)
	}
	return s.mounts.Put(ctx, mountPrefix+client, data)
}

// Get returns client's stored mount and its revision; nil when none is.
func (s *Store) Get(ctx context.Context, client string) (*bridgev1.ServerConfig, uint64, error) {
	e, err := s.mounts.Get(ctx, mountPrefix+client)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	m, ok := decode(e)
	if !ok {
		return nil, 0, fmt.Errorf("the stored mount of %q does not decode", client)
	}
	return m.Config, e.Revision(), nil
}

// Delete removes client's mount; false when none was stored.
func (s *Store) Delete(ctx context.Context, client string) (bool, error) {
	cfg, rev, err := s.Get(ctx, client)
	if err != nil || cfg == nil {
		return false, err
	}
	err = s.mounts.Delete(ctx, mountPrefix+client, jetstream.LastRevision(rev))
	if streams.Conflict(err) { // mounted again meanwhile: that one goes too
		err = s.mounts.Delete(ctx, mountPrefix+client)
	}
	return err == nil, err
}

// Change is one stored mount as a watcher hears it.
type Change struct {
	Client string
	// Config is nil when the mount was removed.
	Config *bridgev1.ServerConfig
	// Rev is the change's revision: a later change has a higher one.
	Rev uint64
}

// Watch calls on for every stored mount, then synced with the clients
// stored at that point, then on for every change, until ctx ends or the
// watch fails.
func (s *Store) Watch(ctx context.Context, on func(Change), synced func(present map[string]bool)) error {
	present, initial := map[string]bool{}, true
	return streams.Watch(ctx, s.mounts, func(e jetstream.KeyValueEntry) {
		if !strings.HasPrefix(e.Key(), mountPrefix) {
			return
		}
		c := Change{Client: strings.TrimPrefix(e.Key(), mountPrefix), Rev: e.Revision()}
		if e.Operation() == jetstream.KeyValuePut {
			m, ok := decode(e)
			if !ok {
				return // not ours to run; Put never writes one
			}
			c.Config = m.GetConfig()
			if initial {
				present[c.Client] = true
			}
		}
		on(c)
	}, func() {
		initial = false
		synced(present)
	})
}

func decode(e jetstream.KeyValueEntry) (*bridgev1.MountRequest, bool) {
	var m bridgev1.MountRequest
	if proto.Unmarshal(e.Value(), &m) != nil || m.GetConfig() == nil {
		return nil, false
	}
	return &m, true
}

// holder is a lease's value.
type holder struct {
	Replica string    `json:"replica"`
	Since   time.Time `json:"since"`
}

// Acquire takes client's lease for replica and returns its revision;
// ErrHeld when another replica holds it.
func (s *Store) Acquire(ctx context.Context, client, replica string) (uint64, error) {
	data, _ := json.Marshal(holder{Replica: replica, Since: time.Now().UTC()})
	rev, err := s.leases.Create(ctx, leasePrefix+client, data)
	if streams.Conflict(err) {
		return 0, ErrHeld
	}
	return rev, err
}

// Renew writes client's lease again at rev, the revision its holder last
// wrote, and returns the new one; ErrHeld when the lease moved on (it
// lapsed and another replica took it).
func (s *Store) Renew(ctx context.Context, client, replica string, rev uint64) (uint64, error) {
	data, _ := json.Marshal(holder{Replica: replica, Since: time.Now().UTC()})
	next, err := s.leases.Update(ctx, leasePrefix+client, data, rev)
	if streams.Conflict(err) || errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, ErrHeld
	}
	return next, err
}

// Release gives client's lease up, unless it has moved on since rev, so
// another replica takes it over at once.
func (s *Store) Release(ctx context.Context, client string, rev uint64) {
	_ = s.leases.Delete(ctx, leasePrefix+client, jetstream.LastRevision(rev))
}

// Holder names the replica holding client's lease; empty when none does.
func (s *Store) Holder(ctx context.Context, client string) (string, error) {
	e, err := s.leases.Get(ctx, leasePrefix+client)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var h holder
	if json.Unmarshal(e.Value(), &h) != nil {
		return "", nil
	}
	return h.Replica, nil
}

// Announce records what replica runs now; the record lapses LeaseTTL
// after the last announcement.
func (s *Store) Announce(ctx context.Context, replica string, clients []string) error {
	data, _ := json.Marshal(clients)
	_, err := s.leases.Put(ctx, replicaPrefix+replica, data)
	return err
}

// Withdraw removes replica's record: it runs nothing now.
func (s *Store) Withdraw(ctx context.Context, replica string) {
	_ = s.leases.Delete(ctx, replicaPrefix+replica)
}

// maxReplicas bounds the replica records RunningOn reads.
const maxReplicas = 256

// RunningOn maps each client to the replicas announcing that they run it.
func (s *Store) RunningOn(ctx context.Context) (map[string][]string, error) {
	keys, err := s.leases.ListKeysFiltered(ctx, replicaPrefix+">")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return map[string][]string{}, nil
		}
		return nil, err
	}
	out := map[string][]string{}
	n := 0
	for key := range keys.Keys() {
		if n++; n > maxReplicas {
			_ = keys.Stop()
			break
		}
		e, err := s.leases.Get(ctx, key)
		if err != nil {
			continue // lapsed meanwhile
		}
		var clients []string
		if json.Unmarshal(e.Value(), &clients) != nil {
			continue
		}
		for _, c := range clients {
			out[c] = append(out[c], strings.TrimPrefix(key, replicaPrefix))
		}
	}
	return out, nil
}
