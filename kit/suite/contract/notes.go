package contract

import (
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// NotesTrailer carries, on a Call answered with a capture, the notes the
// invocation held when it was answered (a StatusResponse's progress, as
// protobuf): a caller relaying them with Status may find the invocation
// collected before it read the last. Absent when there were none, so the
// common call sends nothing more.
const NotesTrailer = "switchboard-notes-bin"

// NotesMD is the trailer carrying notes; nil for none.
func NotesMD(notes []*mailboxv1.ProgressNote) metadata.MD {
	if len(notes) == 0 {
		return nil
	}
	b, err := proto.Marshal(&mailboxv1.StatusResponse{Progress: notes})
	if err != nil {
		return nil
	}
	return metadata.Pairs(NotesTrailer, string(b))
}

// Notes are the notes a Call's trailer carries; nil when it carries none
// (or none that decode).
func Notes(trailer metadata.MD) []*mailboxv1.ProgressNote {
	v := trailer.Get(NotesTrailer)
	if len(v) != 1 {
		return nil
	}
	var st mailboxv1.StatusResponse
	if proto.Unmarshal([]byte(v[0]), &st) != nil {
		return nil
	}
	return st.GetProgress()
}
