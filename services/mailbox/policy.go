package mailbox

import (
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// Policy is who may call what: drivers (operators) post, collect and
// cancel; hosts read and complete.
var Policy = identity.Policy{
	mailboxv1.MailboxService_Invoke_FullMethodName:      {identity.Operator},
	mailboxv1.MailboxService_Call_FullMethodName:        {identity.Operator},
	mailboxv1.MailboxService_Capture_FullMethodName:     {identity.Operator},
	mailboxv1.MailboxService_Cancel_FullMethodName:      {identity.Operator},
	mailboxv1.MailboxService_Invocations_FullMethodName: {identity.Host, identity.Operator},
	mailboxv1.MailboxService_Follow_FullMethodName:      {identity.Host, identity.Operator},
	mailboxv1.MailboxService_Complete_FullMethodName:    {identity.Host, identity.Operator},
}
