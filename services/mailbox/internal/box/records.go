package box

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Durable invocations: one JetStream stream per partition, a subject per
// invocation (sb.rec.<partition>.<client>.<id>) holding its latest state, so
// per host NATS keeps messages only (docs/architecture.md, "Where state
// lives").
const (
	// Partitions is how many streams hold the records; a client's records
	// are all in one, chosen by its name.
	Partitions    = 4
	StreamPrefix  = "SB_MBOX_"
	subjectPrefix = "sb.rec."

	hState  = "Sb-State"  // one of the states below
	hPoster = "Sb-Poster" // the driver that posted it
	hSize   = "Sb-Size"   // what its input, tool and cwd hold, for a read's room
	hDue    = "Sb-Due"    // when the driver's timeout runs out (Unix ns), if it set one

	// removedTTL is how long a removed record's tombstone stays, for the
	// views that have not heard of it yet.
	removedTTL = time.Minute
)

// Record states, in the hState header.
const (
	stQueued    = "q" // waits for its host, or runs
	stAnswered  = "a"
	stCancelled = "c" // answered by its poster's cancel, kept for Status
	stTaken     = "t" // collected with a retry key, kept a minute for its retry
	stRemoved   = "x" // collected or cancelled: a tombstone
)

// errConflict says a record changed since the revision a write expected.
var errConflict = errors.New("the invocation's record changed meanwhile")

func partition(client string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(client))
	return int(h.Sum32() % Partitions)
}

func subject(client, id string) string {
	return subjectPrefix + strconv.Itoa(partition(client)) + "." + client + "." + id
}

// records writes and reads the durable invocations.
type records struct {
	js      jetstream.JetStream
	streams [Partitions]jetstream.Stream
	lag     [Partitions]viewLag // this replica's writes against what its view heard
}

// declareRecords creates the partitions' streams when missing (refusing
// ones someone else made).
func declareRecords(ctx context.Context, js jetstream.JetStream, cfg Config) (*records, error) {
	r := &records{js: js}
	for k := range Partitions {
		var err error
		r.streams[k], err = streams.Ensure(ctx, js, jetstream.StreamConfig{
			Name:                   StreamPrefix + strconv.Itoa(k),
			Description:            "Switchboard's durable invocations (Invoke, Tasks, the backlog of hosts not reading), one subject each",
			Subjects:               []string{subjectPrefix + strconv.Itoa(k) + ".>"},
			Retention:              jetstream.LimitsPolicy,
			Storage:                jetstream.FileStorage,
			Replicas:               max(cfg.Replicas, 1),
			MaxMsgsPerSubject:      1,
			MaxMsgs:                int64(max(cfg.MaxSlots/Partitions, 1)),
			MaxBytes:               cfg.MaxQueueBytes / Partitions,
			Discard:                jetstream.DiscardNew,
			AllowMsgTTL:            true,
			SubjectDeleteMarkerTTL: time.Minute,
			AllowDirect:            cfg.Replicas <= 1,
		})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// rec is one record: from a view, its header fields; from a read, its body too.
type rec struct {
	client, id, poster, state string
	size                      int
	due                       int64 // the driver's deadline, Unix ns; 0: none
	rev                       uint64
	body                      *mailboxv1.StoredInvocation
}

// put writes the record of inv at rev (0: it must not exist), living ttl.
func (r *records) put(ctx context.Context, client, id, state string, body *mailboxv1.StoredInvocation, rev uint64, ttl time.Duration) (uint64, error) {
	m := nats.NewMsg(subject(client, id))
	m.Header.Set(hState, state)
	m.Header.Set(hPoster, body.GetPoster())
	m.Header.Set(hSize, strconv.Itoa(inflight.PostSize(body.GetInput(), body.GetTool(), body.Cwd, body.McpParams)))
	if d := body.GetDeadline(); d != 0 && body.GetCapture() == nil && body.GetHandoffs() == 0 { // one handed before: its host stops it at the deadline
		m.Header.Set(hDue, strconv.FormatInt(d, 10))
	}
	if state != stRemoved {
		var err error
		if m.Data, err = proto.Marshal(body); err != nil {
			return 0, err
		}
	}
	var ack *jetstream.PubAck
	err := natsconn.Request(ctx, func(ctx context.Context) (err error) {
		ack, err = r.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
		return err
	})
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) { // R1 and R>1 say it apart
		return 0, errConflict
	}
	if err != nil {
		return 0, err
	}
	r.lag[partition(client)].wrote(ack.Sequence, time.Now())
	return ack.Sequence, nil
}

// create writes the first record of id, trying again while JetStream
// elects a leader (streams.ThroughElection). A try stored without its
// answer reaching here is found by the id, which no other invocation has,
// and counts as written.
func (r *records) create(ctx context.Context, client, id string, body *mailboxv1.StoredInvocation, ttl time.Duration) (uint64, error) {
	var rev uint64
	err := streams.ThroughElection(ctx, r.js.Conn(), func(ctx context.Context, retried bool) error {
		var err error
		rev, err = r.put(ctx, client, id, stQueued, body, 0, ttl)
		if err == errConflict && retried {
			full, gerr := r.get(ctx, client, id)
			if gerr == nil && full != nil && full.poster == body.GetPoster() {
				rev = full.rev
				return nil
			}
		}
		return err
	})
	return rev, err
}

// remove writes a record's tombstone at rev.
func (r *records) remove(ctx context.Context, client, id, poster string, rev uint64) error {
	_, err := r.put(ctx, client, id, stRemoved, &mailboxv1.StoredInvocation{Poster: poster}, rev, removedTTL)
	return err
}

// get reads a record whole; nil when it is gone.
func (r *records) get(ctx context.Context, client, id string) (*rec, error) {
	return r.last(ctx, partition(client), subject(client, id))
}

// find reads the record of id whichever its client: a view that has not
// heard of it yet asks this.
func (r *records) find(ctx context.Context, id string) (*rec, error) {
	if !inflight.IsID(id) {
		return nil, nil
	}
	for k := range Partitions {
		if got, err := r.last(ctx, k, subjectPrefix+strconv.Itoa(k)+".*."+id); got != nil || err != nil {
			return got, err
		}
	}
	return nil, nil
}

func (r *records) last(ctx context.Context, k int, subj string) (*rec, error) {
	var m *jetstream.RawStreamMsg
	err := natsconn.Request(ctx, func(ctx context.Context) (err error) {
		m, err = r.streams[k].GetLastMsgForSubject(ctx, subj)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	got, ok := parse(m.Subject, m.Header, m.Sequence)
	if !ok || got.state == stRemoved || m.Header.Get(markerReason) != "" {
		return nil, nil
	}
	got.body = &mailboxv1.StoredInvocation{}
	if err := proto.Unmarshal(m.Data, got.body); err != nil {
		return nil, fmt.Errorf("the record of %s cannot be read: %w", got.id, err)
	}
	return got, nil
}

// parse reads a record's subject and headers.
func parse(subj string, h nats.Header, seq uint64) (*rec, bool) {
	parts := strings.Split(subj, ".")
	if len(parts) != 5 {
		return nil, false
	}
	size, _ := strconv.Atoi(h.Get(hSize))
	due, _ := strconv.ParseInt(h.Get(hDue), 10, 64)
	return &rec{client: parts[3], id: parts[4], poster: h.Get(hPoster), state: h.Get(hState), size: size, due: due, rev: seq}, true
}

// markerReason heads the marker JetStream leaves where a record expired.
const markerReason = "Nats-Marker-Reason"
