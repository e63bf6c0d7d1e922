package natsusers_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/switchboard-run/switchboard/kit/suite/natsusers"
)

// Every stream and bucket has one owner, every bucket read has an owner
// too, and every user reads its own inbox and no one else's.
func TestTheTableGivesEachStreamOneOwner(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	for _, u := range natsusers.Users {
		for _, s := range append(slices.Clone(u.Streams), u.Buckets...) {
			if o, dup := owner[s]; dup {
				t.Errorf("%s is owned by %s and %s", s, o, u.Name)
			}
			owner[s] = u.Name
		}
	}
	for _, u := range natsusers.Users {
		for _, b := range u.Reads {
			if owner[b] == "" || owner[b] == u.Name {
				t.Errorf("%s reads %s, which %q owns", u.Name, b, owner[b])
			}
		}
		p := u.Expand()
		if !slices.Contains(p.Subscribe, natsusers.Inbox(u.Name)+".>") {
			t.Errorf("%s may not read its own inbox: %v", u.Name, p.Subscribe)
		}
		for _, s := range append(p.Publish, p.Subscribe...) {
			if s == ">" || strings.HasPrefix(s, "_INBOX.") || (strings.HasPrefix(s, "_INBOX_") && !strings.HasPrefix(s, natsusers.Inbox(u.Name)+".")) {
				t.Errorf("%s may use %s", u.Name, s)
			}
		}
	}
}

// The configuration printed for an operator's own nats-server means what
// the embedded server enforces: the same users with the same subjects.
func TestTheAuthorizationBlockIsTheTable(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(natsusers.Authorization()), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server does not read the printed block: %v\n%s", err, natsusers.Authorization())
	}
	if len(opts.Users) != len(natsusers.Users) {
		t.Fatalf("the block holds %d users; the table %d", len(opts.Users), len(natsusers.Users))
	}
	for i, u := range natsusers.Users {
		got, want := opts.Users[i], u.Expand()
		if got.Username != natsusers.DN(u.Name) || !reflect.DeepEqual(got.Permissions.Publish.Allow, want.Publish) ||
			!reflect.DeepEqual(got.Permissions.Subscribe.Allow, want.Subscribe) {
			t.Errorf("user %d of the block is %s %+v %+v; want %s %+v", i, got.Username, got.Permissions.Publish, got.Permissions.Subscribe, u.Name, want)
		}
	}
}
