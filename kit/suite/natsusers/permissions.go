package natsusers

import (
	"slices"
	"strings"
)

// Permissions are the subjects a user may publish to and subscribe to;
// everything else is denied.
type Permissions struct {
	Publish, Subscribe []string
}

// DN is the certificate subject NATS maps to the user name: what
// verify_and_map compares with the client certificate's subject.
func DN(name string) string { return "CN=" + name + ",OU=service" }

// Inbox is the prefix of name's reply subjects (nats.CustomInboxPrefix):
// each user subscribes to its own replies only, so no one reads another's
// JetStream answers or deliveries.
func Inbox(name string) string { return "_INBOX_" + name }

// Lookup is the row of name.
func Lookup(name string) (User, bool) {
	i := slices.IndexFunc(Users, func(u User) bool { return u.Name == name })
	if i < 0 {
		return User{}, false
	}
	return Users[i], true
}

// jsAPI prefixes JetStream's API subjects ($JS.API.<op>.<stream>…).
const jsAPI = "$JS.API."

// Expand is u's permissions: the account's JetStream state; for each stream and bucket it owns, the API of
// that stream (declare, read, consume, delete and purge messages; never
// delete the stream), its acks and flow control, and for a bucket its
// keys; for each bucket it reads, what a get and a watch send (info,
// direct and stored gets, an ordered consumer and its flow control); its
// core subjects; its own inbox, to read and to answer its peers in.
func (u User) Expand() Permissions {
	// The account's JetStream state (limits, usage; no stream's data): the
	// client library asks it before it declares a bucket.
	pub := []string{jsAPI + "INFO"}
	for _, s := range u.Streams {
		pub = append(pub, ownStream(s)...)
	}
	for _, b := range u.Buckets {
		pub = append(pub, ownStream(kvStream(b))...)
		pub = append(pub, "$KV."+b+".>")
	}
	for _, b := range u.Reads {
		pub = append(pub, readStream(kvStream(b))...)
	}
	// Its own inbox: a replica answers another replica's request there.
	inbox := Inbox(u.Name) + ".>"
	pub = append(pub, inbox)
	pub = append(pub, u.Core...)
	pub = append(pub, u.Sends...)
	sub := append([]string{inbox}, u.Core...)
	return Permissions{Publish: pub, Subscribe: sub}
}

// kvStream is the stream that holds bucket b.
func kvStream(b string) string { return "KV_" + b }

// ownStream is what the owner of stream s sends about it.
func ownStream(s string) []string {
	return append(readStream(s),
		jsAPI+"STREAM.CREATE."+s, jsAPI+"STREAM.UPDATE."+s, jsAPI+"STREAM.PURGE."+s,
		jsAPI+"STREAM.MSG.DELETE."+s,
		jsAPI+"CONSUMER.DURABLE.CREATE."+s+".>", jsAPI+"CONSUMER.MSG.NEXT."+s+".>",
		jsAPI+"CONSUMER.UNPIN."+s+".>", jsAPI+"CONSUMER.NAMES."+s, jsAPI+"CONSUMER.LIST."+s,
		"$JS.ACK."+s+".>")
}

// readStream is what a reader of stream s sends: its info, a message by
// sequence or subject (direct, or from the leader when the stream allows
// no direct reads), and an ordered consumer for a watch, with its flow
// control.
func readStream(s string) []string {
	return []string{
		jsAPI + "STREAM.INFO." + s, jsAPI + "STREAM.MSG.GET." + s,
		jsAPI + "DIRECT.GET." + s, jsAPI + "DIRECT.GET." + s + ".>",
		jsAPI + "CONSUMER.CREATE." + s, jsAPI + "CONSUMER.CREATE." + s + ".>",
		jsAPI + "CONSUMER.INFO." + s + ".>", jsAPI + "CONSUMER.DELETE." + s + ".>",
		"$JS.FC." + s + ".>",
	}
}

// Authorization is the users of the table as a nats-server configuration
// spells them, for an operator running a NATS server of their own: put it
// beside a tls block with verify_and_map: true.
func Authorization() string {
	var b strings.Builder
	b.WriteString("authorization {\n  users = [\n")
	for _, u := range Users {
		b.WriteString(`    {user: "` + DN(u.Name) + `", permissions: ` + u.Expand().String() + "}\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// String is the permissions as a nats-server configuration spells them.
func (p Permissions) String() string {
	quote := func(subjects []string) string {
		q := make([]string, len(subjects))
		for i, s := range subjects {
			q[i] = `"` + s + `"`
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return "{publish: {allow: " + quote(p.Publish) + "}, subscribe: {allow: " + quote(p.Subscribe) + "}}"
}
