package natsserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/suite/natsusers"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// peer is a connection to the suite's NATS as one certificate, with the
// permission violations the server reports to it.
type peer struct {
	nc         *nats.Conn
	js         jetstream.JetStream
	violations chan error
}

// dial connects to ns as the leaf name of grade, the way the services do
// (natsconn, which picks the user's inbox prefix).
func dial(t *testing.T, pki *testkit.PKI, ns *natsserver.Server, name, grade string) (*peer, error) {
	t.Helper()
	f := pki.Leaf(t, name, grade)
	p := &peer{violations: make(chan error, 16)}
	c := natsconn.Config{URLs: ns.ClientURL(), CA: f.CA, Cert: f.Cert, Key: f.Key}
	nc, err := c.Connect("test "+name, slog.New(slog.DiscardHandler), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			select {
			case p.violations <- err:
			default:
			}
		}
	}))
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	p.nc = nc
	p.js, err = jetstream.New(nc)
	return p, err
}

func mustDial(t *testing.T, pki *testkit.PKI, ns *natsserver.Server, name string) *peer {
	t.Helper()
	p, err := dial(t, pki, ns, name, "service")
	if err != nil {
		t.Fatalf("%s could not connect to NATS: %v", name, err)
	}
	return p
}

// refused runs op, which NATS must refuse: it fails, and the server tells
// the peer of a permission violation naming subject.
func (p *peer) refused(t *testing.T, what, subject string, op func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := op(ctx); err == nil {
		t.Fatalf("%s succeeded; NATS must refuse it", what)
	}
	select {
	case err := <-p.violations:
		if !strings.Contains(err.Error(), subject) {
			t.Fatalf("%s: the violation %q does not name %s", what, err, subject)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s failed, but NATS reported no permission violation", what)
	}
}

func ok(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// A host's, a driver's, an admin's and a scraper's certificate are each
// refused at connect, as are a service certificate of no NATS user (the
// gateway's) and a certificate named like a service but of another grade.
func TestNATSAdmitsOnlyTheSuitesServices(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	ns := testkit.NATSTLS(t, pki)
	for _, leaf := range [][2]string{{"laptop", "host"}, {"alice", "driver"}, {"ops", "admin"}, {"prometheus", "scrape"},
		{"prometheus", "service"}, {"gateway", "service"}, {"registry", "host"}, {"registry", ""}} {
		if _, err := dial(t, pki, ns, leaf[0], leaf[1]); !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("CN=%s OU=%s connected to NATS (%v); want an authorization violation", leaf[0], leaf[1], err)
		}
	}
	for _, u := range natsusers.Users {
		mustDial(t, pki, ns, u.Name)
	}
}

// Each service declares, writes and reads what it owns; the registry
// reads presence but cannot write it; and each is refused on the others'
// buckets — among them the two writes that forged an admin token and a
// mount that runs a shell.
func TestEachServiceReachesOnlyItsOwn(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	ns := testkit.NATSTLS(t, pki)
	reg, mb, br := mustDial(t, pki, ns, "registry"), mustDial(t, pki, ns, "mailbox"), mustDial(t, pki, ns, "bridge")
	ctx := context.Background()
	declare := func(p *peer, bucket string) jetstream.KeyValue {
		t.Helper()
		kv, err := streams.EnsureKV(ctx, p.js, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Storage: jetstream.FileStorage})
		ok(t, "declaring "+bucket, err)
		_, err = kv.Put(ctx, "k", []byte("v"))
		ok(t, "writing "+bucket, err)
		_, err = kv.Get(ctx, "k")
		ok(t, "reading "+bucket, err)
		ok(t, "purging a key of "+bucket, kv.Purge(ctx, "k"))
		return kv
	}
	declare(reg, "sb_registry")
	presence := declare(mb, "sb_presence")
	declare(br, "sb_mounts")
	declare(br, "sb_mount_leases")
	for _, s := range []jetstream.StreamConfig{{Name: "SB_MBOX_0", Subjects: []string{"sb.rec.0.>"}},
		{Name: "SB_MBOX_3", Subjects: []string{"sb.rec.3.>"}, AllowDirect: true}} {
		st, err := streams.Ensure(ctx, mb.js, s)
		ok(t, "declaring "+s.Name, err)
		subject := strings.TrimSuffix(s.Subjects[0], ">") + "box.inv-1"
		_, err = mb.js.Publish(ctx, subject, []byte("x"))
		ok(t, "publishing into "+s.Name, err)
		_, err = st.GetLastMsgForSubject(ctx, subject)
		ok(t, "reading the last record of "+subject, err)
		c, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c-box", AckPolicy: jetstream.AckExplicitPolicy})
		ok(t, "a consumer of "+s.Name, err)
		batch, err := c.Fetch(1)
		ok(t, "fetching from "+s.Name, err)
		for m := range batch.Messages() {
			ok(t, "acking a message of "+s.Name, m.DoubleAck(ctx))
		}
	}

	// The registry reads presence: a get and a watch.
	_, err := presence.Put(ctx, "read.box", []byte(`{"replica":"m1"}`))
	ok(t, "writing presence", err)
	seen, err := reg.js.KeyValue(ctx, "sb_presence")
	ok(t, "the registry binding presence", err)
	_, err = seen.Get(ctx, "read.box")
	ok(t, "the registry reading presence", err)
	w, err := seen.WatchAll(ctx)
	ok(t, "the registry watching presence", err)
	var keys []string
	for e := range w.Updates() {
		if e == nil {
			break
		}
		keys = append(keys, e.Key())
	}
	if !slices.Contains(keys, "read.box") {
		t.Fatalf("the registry's watch of presence showed %v, not read.box", keys)
	}
	ok(t, "stopping the watch", w.Stop())

	put := func(p *peer, bucket, key string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := p.js.Publish(ctx, "$KV."+bucket+"."+key, []byte(`{"grade":"admin"}`))
			return err
		}
	}
	get := func(p *peer, bucket string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := p.js.KeyValue(ctx, bucket)
			return err
		}
	}
	reg.refused(t, "the registry writing presence", "$KV.sb_presence.read.box", put(reg, "sb_presence", "read.box"))
	br.refused(t, "the bridge forging a token", "$KV.sb_registry.token.", put(br, "sb_registry", "token.0a1b"))
	mb.refused(t, "the mailbox forging a token", "$KV.sb_registry.token.", put(mb, "sb_registry", "token.0a1b"))
	reg.refused(t, "the registry forging a mount", "$KV.sb_mounts.mount.sh", put(reg, "sb_mounts", "mount.sh"))
	mb.refused(t, "the mailbox forging a mount", "$KV.sb_mounts.mount.sh", put(mb, "sb_mounts", "mount.sh"))
	br.refused(t, "the bridge writing presence", "$KV.sb_presence.", put(br, "sb_presence", "read.box"))
	mb.refused(t, "the mailbox declaring the store it replaced", "STREAM.CREATE.SB_QUEUE", func(ctx context.Context) error {
		_, err := mb.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SB_QUEUE", Subjects: []string{"sb.queue.*"}})
		return err
	})
	br.refused(t, "the bridge reading the mailbox's records", "SB_MBOX_3", func(ctx context.Context) error {
		st, err := br.js.Stream(ctx, "SB_MBOX_3")
		if err == nil {
			_, err = st.GetLastMsgForSubject(ctx, "sb.rec.3.box.inv-1")
		}
		return err
	})
	br.refused(t, "the bridge reading the registry's bucket", "KV_sb_registry", get(br, "sb_registry"))
	reg.refused(t, "the registry reading the mounts", "KV_sb_mounts", get(reg, "sb_mounts"))
	reg.refused(t, "the registry publishing a record into the mailbox's store", "sb.rec.0.box.inv-2", func(ctx context.Context) error {
		_, err := reg.js.Publish(ctx, "sb.rec.0.box.inv-2", []byte("x"))
		return err
	})
	br.refused(t, "the bridge handing a mailbox replica an invocation", "sb.host.box", func(context.Context) error {
		_, err := br.nc.Request("sb.host.box", []byte("{}"), time.Second)
		return err
	})
	reg.refused(t, "the registry declaring a bucket of its own choosing", "KV_sb_new", func(ctx context.Context) error {
		_, err := reg.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "sb_new"})
		return err
	})
	br.refused(t, "the bridge deleting the registry's stream", "STREAM.DELETE.KV_sb_registry", func(ctx context.Context) error {
		return br.js.DeleteStream(ctx, "KV_sb_registry")
	})

	// The audit trail: the registry owns it; each service records on its
	// own subject, and none as another or reads it.
	trail, err := audit.Declare(ctx, reg.js, 1, time.Hour, 1<<20)
	ok(t, "declaring the audit trail", err)
	for name, p := range map[string]*peer{"registry": reg, "mailbox": mb, "bridge": br} {
		_, err := p.js.Publish(ctx, audit.SubjectPrefix+name, []byte("x"))
		ok(t, name+" recording", err)
	}
	if info, err := trail.Info(ctx); err != nil || info.State.Msgs != 3 {
		t.Fatalf("the trail holds %v events (%v), want 3", info.State.Msgs, err)
	}
	mb.refused(t, "the mailbox recording as the registry", audit.SubjectPrefix+"registry", func(ctx context.Context) error {
		_, err := mb.js.Publish(ctx, audit.SubjectPrefix+"registry", []byte("x"))
		return err
	})
	br.refused(t, "the bridge reading the audit trail", audit.Stream, func(ctx context.Context) error {
		_, err := br.js.Stream(ctx, audit.Stream)
		return err
	})
}

// Each user subscribes only to its own inbox and core subjects: no one
// reads another's replies, or everything.
func TestNoServiceReadsAnothersReplies(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	ns := testkit.NATSTLS(t, pki)
	reg := mustDial(t, pki, ns, "registry")
	if got, want := reg.nc.NewInbox(), natsusers.Inbox("registry")+"."; !strings.HasPrefix(got, want) {
		t.Fatalf("the registry's inbox %s is not under %s", got, want)
	}
	for _, subject := range []string{natsusers.Inbox("bridge") + ".>", "_INBOX.>", ">", "sb.done.*"} {
		if _, err := reg.nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
		reg.refused(t, "the registry subscribing to "+subject, subject, func(context.Context) error {
			return errors.New("refused asynchronously")
		})
	}
}

// A cluster's routes are taken from the nodes' own certificate only: a
// server presenting a service's leaf cannot join and read everything. Two
// nodes form a cluster; a route that presents the registry's leaf to one
// of them, speaking NATS's route protocol, is refused.
func TestNATSRoutesAdmitOnlyTheNodes(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	cfg, err := natsserver.TLS(pki.Leaf(t, natsusers.Node, "service"))
	ok(t, "the nodes' TLS", err)
	routes := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			var s *natsserver.Server
			s, errs[i] = natsserver.Start(natsserver.Options{Dir: t.TempDir(), Listen: "127.0.0.1:0", Name: fmt.Sprint("n", i), TLS: cfg,
				Cluster: &natsserver.Cluster{Name: "c", Listen: routes[i], Routes: []string{routes[1-i]}}})
			if s != nil {
				t.Cleanup(s.Shutdown)
			}
		})
	}
	wg.Wait()
	ok(t, "starting the cluster", errors.Join(errs...))

	leaf, err := pki.Leaf(t, "registry", "service").ClientConfig("127.0.0.1")
	ok(t, "the registry's TLS", err)
	c, err := tls.Dial("tcp", routes[0], leaf)
	ok(t, "dialing the route port", err)
	defer c.Close()
	r := bufio.NewReader(c)
	if info, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(info, "INFO ") {
		t.Fatalf("the route port greeted with %q (%v)", info, err)
	}
	_, err = c.Write([]byte(`CONNECT {"verbose":false,"pedantic":false,"tls_required":true,"name":"rogue","cluster":"c"}` + "\r\nPING\r\n"))
	ok(t, "sending CONNECT", err)
	reply, _ := r.ReadString('\n')
	if !strings.Contains(reply, "Authorization Violation") {
		t.Fatalf("a route presenting the registry's leaf was answered %q; want an authorization violation", reply)
	}
}
