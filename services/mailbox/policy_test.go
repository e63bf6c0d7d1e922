package mailbox_test

import (
	"testing"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
)

func TestPolicyNamesEveryRPCAndNoOther(t *testing.T) {
	t.Parallel()
	testkit.CheckPolicy(t, mailbox.Policy, &mailboxv1.MailboxService_ServiceDesc)
}
