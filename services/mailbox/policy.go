package mailbox

import (
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// drivers post, collect and cancel; hosts read their queue and complete.
var (
	drivers = []identity.Grade{identity.Driver, identity.Admin}
	hosts   = []identity.Grade{identity.Host}
)

// Policy is who may call what (docs/security.md): drivers and admins
// post, collect, cancel, answer and ask the status of what they posted, within the
// workspaces they may see; hosts alone read their queue, and report on and
// complete what was addressed to them.
var Policy = identity.Policy{
	mailboxv1.MailboxService_Invoke_FullMethodName:      drivers,
	mailboxv1.MailboxService_Call_FullMethodName:        drivers,
	mailboxv1.MailboxService_Capture_FullMethodName:     drivers,
	mailboxv1.MailboxService_Cancel_FullMethodName:      drivers,
	mailboxv1.MailboxService_Watch_FullMethodName:       drivers,
	mailboxv1.MailboxService_Status_FullMethodName:      drivers,
	mailboxv1.MailboxService_Answer_FullMethodName:      drivers,
	mailboxv1.MailboxService_Invocations_FullMethodName: hosts,
	mailboxv1.MailboxService_Follow_FullMethodName:      hosts,
	mailboxv1.MailboxService_Serve_FullMethodName:       hosts,
	mailboxv1.MailboxService_Complete_FullMethodName:    hosts,
	mailboxv1.MailboxService_Report_FullMethodName:      hosts,
}
