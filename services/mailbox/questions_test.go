package mailbox_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A host's question is a note its poster reads with Status; the poster's
// answer, posted through another replica, reaches the host on its read as
// an answered event, and a note says so. Nobody else may answer, a question
// not asked cannot be, nor one answered already, and once the call is
// answered its questions are void.
func TestAQuestionsAnswerReachesTheHostThroughAnyReplica(t *testing.T) {
	t.Parallel()
	s, other := newTwoReplicas(t)
	stream, id := s.running(t)
	q := &mailboxv1.Question{Id: "q1", Method: "elicitation/create", Params: `{"message":"Name?","requestedSchema":{"type":"object"}}`}
	if err := s.ask(id, q); err != nil {
		t.Fatalf("asking: %v", err)
	}
	r := <-waitStatus(other, id, 0)
	asked := proto.CloneOf(q)
	asked.HandOff = 1 // the mailbox marks the hand-off that asked
	if r.err != nil || len(r.res.GetProgress()) != 1 || !proto.Equal(r.res.GetProgress()[0].GetQuestion(), asked) {
		t.Fatalf("the poster's status: %v, %v; want the question", r.res, r.err)
	}
	refusals := []struct {
		name string
		as   *mailboxv1.AnswerRequest
		who  string
		code codes.Code
		says string
	}{
		{"someone else's", &mailboxv1.AnswerRequest{Invocation: id, Question: "q1", Result: `{}`}, "mallory", codes.NotFound, "no invocation"},
		{"a question not asked", &mailboxv1.AnswerRequest{Invocation: id, Question: "q9", Result: `{}`}, "driver", codes.FailedPrecondition, `no question "q9" waiting`},
		{"both result and error", &mailboxv1.AnswerRequest{Invocation: id, Question: "q1", Result: `{}`, Error: &mailboxv1.AnswerError{Code: -1}}, "driver", codes.InvalidArgument, "exactly one of result and error"},
		{"a result that is not an object", &mailboxv1.AnswerRequest{Invocation: id, Question: "q1", Result: `[1]`}, "driver", codes.InvalidArgument, "result"},
	}
	for _, c := range refusals {
		_, err := other.Answer(testkit.As(c.who, identity.Driver), c.as)
		if status.Code(err) != c.code || !strings.Contains(status.Convert(err).Message(), c.says) {
			t.Errorf("%s: %v; want %v saying %q", c.name, err, c.code, c.says)
		}
	}
	answer := &mailboxv1.AnswerRequest{Invocation: id, Question: "q1", Result: `{"action":"accept","content":{"name":"alice"}}`}
	if _, err := other.Answer(driver, answer); err != nil {
		t.Fatalf("answering through the other replica: %v", err)
	}
	got := next(t, stream).GetAnswered()
	if got.GetInvocation() != id || got.GetQuestion() != "q1" || got.GetResult() != answer.Result || got.Error != nil {
		t.Fatalf("the host heard %v; want the answer as posted", got)
	}
	r = <-waitStatus(s.mb, id, 1)
	if r.err != nil || len(r.res.GetProgress()) != 1 || r.res.GetProgress()[0].GetAnswered() != "q1" {
		t.Fatalf("the poster's status after the answer: %v, %v; want a note that q1 is answered", r.res, r.err)
	}
	if _, err := other.Answer(driver, answer); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "answered already") {
		t.Fatalf("answering q1 again: %v; want FAILED_PRECONDITION, answered already", err)
	}
	if _, err := s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: id, Capture: capture.New("done", "", 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.mb.Answer(driver, answer); status.Code(err) != codes.NotFound && status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("answering after the call was answered: %v; want a refusal", err)
	}
}

// A question is bounded: a known method, an id, params that are a JSON
// object within 64 KiB, asked once, at most MaxQuestions per invocation.
func TestAQuestionIsBounded(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	_, id := s.running(t)
	ask := func(q *mailboxv1.Question) error { return s.ask(id, q) }
	for _, c := range []struct {
		q    *mailboxv1.Question
		says string
	}{
		{&mailboxv1.Question{Id: "a", Method: "tools/call", Params: `{}`}, `method "tools/call" is not one a poster can be asked`},
		{&mailboxv1.Question{Id: "a b", Method: "elicitation/create", Params: `{}`}, `question id "a b"`},
		{&mailboxv1.Question{Id: "a", Method: "elicitation/create", Params: `"x"`}, "question params"},
		{&mailboxv1.Question{Id: "a", Method: "elicitation/create", Params: `{"m":"` + strings.Repeat("x", contract.MaxQuestionParams) + `"}`}, "over the 65536"},
	} {
		if err := ask(c.q); status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c.says) {
			t.Errorf("%v: %v; want INVALID_ARGUMENT saying %q", c.q.GetId(), err, c.says)
		}
	}
	for i := range contract.MaxQuestions {
		if err := ask(&mailboxv1.Question{Id: "q" + string(rune('a'+i)), Method: "sampling/createMessage", Params: `{}`}); err != nil {
			t.Fatalf("question %d: %v", i, err)
		}
	}
	if err := ask(&mailboxv1.Question{Id: "qa", Method: "sampling/createMessage", Params: `{}`}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("a question asked twice: %v; want ALREADY_EXISTS", err)
	}
	if err := ask(&mailboxv1.Question{Id: "qz", Method: "sampling/createMessage", Params: `{}`}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("one question past the bound: %v; want RESOURCE_EXHAUSTED", err)
	}
}

// A question belongs to the hand-off that asked it: once the host died and
// the invocation was handed out again, the old question is void (its run
// ended) and the new run may ask as many as the first.
func TestAQuestionOfAnEarlierHandOffIsVoid(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	_, id, stop := s.handed(t)
	ask := func(q string) error { // the host's hand_off is ignored
		return s.ask(id, &mailboxv1.Question{Id: q, Method: "elicitation/create", Params: `{}`, HandOff: 7})
	}
	if err := ask("h1q1"); err != nil {
		t.Fatal(err)
	}
	stop() // the host dies
	again := next(t, s.refollow(t, "laptop", 1)).GetInvocation()
	if again.GetDelivery() != 2 {
		t.Fatalf("handed again as delivery %d; want 2", again.GetDelivery())
	}
	for i := range contract.MaxQuestions {
		if err := ask(fmt.Sprintf("h2q%d", i+1)); err != nil {
			t.Fatalf("the new run's question %d: %v", i+1, err)
		}
	}
	st, err := s.mb.Status(driver, &mailboxv1.StatusRequest{Invocation: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.GetProgress() {
		want := int32(2)
		if n.GetQuestion().GetId() == "h1q1" {
			want = 1
		}
		if got := n.GetQuestion().GetHandOff(); got != want {
			t.Errorf("question %s is marked hand-off %d; want %d (the mailbox's count, not the host's)", n.GetQuestion().GetId(), got, want)
		}
	}
	_, err = s.mb.Answer(driver, &mailboxv1.AnswerRequest{Invocation: id, Question: "h1q1", Result: `{"action":"decline"}`})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "asked by hand-off 1, whose run ended") {
		t.Fatalf("answering the first run's question: %v; want FAILED_PRECONDITION, its run ended", err)
	}
}

// A client's runs may have at most MaxWaitingPerClient questions waiting
// at once: one more is refused with a sentence until an answer frees room.
func TestAClientsWaitingQuestionsAreBounded(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	s.advertise(t, "laptop", "slow")
	stream, stop := s.follow(t, "laptop")
	t.Cleanup(stop)
	calls := contract.MaxWaitingPerClient/contract.MaxQuestions + 1
	ids := make([]string, calls)
	for i := range ids {
		ids[i] = s.invoke(t, "laptop", "slow", "{}")
		next(t, stream)
	}
	ask := func(id, q string) error {
		return s.ask(id, &mailboxv1.Question{Id: q, Method: "elicitation/create", Params: `{}`})
	}
	for _, id := range ids[:calls-1] {
		for q := range contract.MaxQuestions {
			if err := ask(id, fmt.Sprintf("q%d", q)); err != nil {
				t.Fatalf("question %d of %s: %v", q, id, err)
			}
		}
	}
	last := ids[calls-1]
	if err := ask(last, "q0"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), `"laptop" has 64 questions waiting`) {
		t.Fatalf("one question past the client's bound: %v; want RESOURCE_EXHAUSTED saying so", err)
	}
	if _, err := s.mb.Answer(driver, &mailboxv1.AnswerRequest{Invocation: ids[0], Question: "q0", Result: `{}`}); err != nil {
		t.Fatal(err)
	}
	if err := ask(last, "q0"); err != nil {
		t.Fatalf("a question once an answer freed room: %v", err)
	}
}
