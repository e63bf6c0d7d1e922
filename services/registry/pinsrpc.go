package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
)

// pinView is the stored pin of client's tool in ws with its state against
// what the client advertises now. Call with s.mu held.
func (s *state) pinView(ws, client string, stored *registryv1.Pin) *registryv1.Pin {
	if p := s.pinned[ws][client][stored.GetTool()]; p != nil {
		return p
	}
	if a := s.adverts[client]; a != nil {
		for i, t := range a.tools {
			if t.GetName() == stored.GetTool() {
				return derived(stored, a.names[i], registryv1.PinState_PIN_STATE_PINNED, t, a.fps[i])
			}
		}
	}
	return derived(stored, stored.GetPresentedName(), registryv1.PinState_PIN_STATE_PINNED, nil, "")
}

// ListPins lists a workspace's pins whose tool changed, or all of them.
func (s *Service) ListPins(ctx context.Context, req *registryv1.ListPinsRequest) (*registryv1.ListPinsResponse, error) {
	ws, st := req.GetWorkspace(), s.st
	members, err := st.lockMembers(ctx, ws)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	res := &registryv1.ListPinsResponse{Policy: pins.PolicyOf(st.policies[ws])}
	for _, client := range sortedKeys(members) {
		set := st.pinSets[ws][client]
		if set == nil {
			continue
		}
		for _, tool := range sortedKeys(set.byTool) {
			p := st.pinView(ws, client, set.byTool[tool])
			if req.GetAll() || p.GetAdvertised() != nil {
				res.Pins = append(res.Pins, p)
			}
		}
	}
	slices.SortStableFunc(res.Pins, func(a, b *registryv1.Pin) int { return strings.Compare(a.GetPresentedName(), b.GetPresentedName()) })
	return res, nil
}

// ApprovePin pins the definition a tool advertises now.
func (s *Service) ApprovePin(ctx context.Context, req *registryv1.ApprovePinRequest) (*registryv1.ApprovePinResponse, error) {
	p, err := s.decidePin(ctx, "approve", req.GetWorkspace(), req.GetPresentedName(), req.GetFingerprint(), func(stored, now *registryv1.Pin, by string) *registryv1.Pin {
		return &registryv1.Pin{Workspace: stored.GetWorkspace(), Client: stored.GetClient(), Tool: stored.GetTool(), PresentedName: now.GetPresentedName(),
			Pinned: now.GetAdvertised(), Fingerprint: now.GetAdvertisedFingerprint(), PinnedAt: timestamppb.New(time.Now()), PinnedBy: by}
	})
	if err != nil {
		return nil, err
	}
	s.st.act(ctx, "pin.approve", req.GetWorkspace(), req.GetPresentedName(), "fingerprint "+req.GetFingerprint())
	return &registryv1.ApprovePinResponse{Pin: p}, nil
}

// RejectPin rejects the definition a tool advertises now.
func (s *Service) RejectPin(ctx context.Context, req *registryv1.RejectPinRequest) (*registryv1.RejectPinResponse, error) {
	p, err := s.decidePin(ctx, "reject", req.GetWorkspace(), req.GetPresentedName(), req.GetFingerprint(), func(stored, now *registryv1.Pin, _ string) *registryv1.Pin {
		next := derived(stored, stored.GetPresentedName(), 0, nil, "")
		next.State = registryv1.PinState_PIN_STATE_UNSPECIFIED
		fp := now.GetAdvertisedFingerprint()
		next.Rejected = &fp
		return next
	})
	if err != nil {
		return nil, err
	}
	s.st.act(ctx, "pin.reject", req.GetWorkspace(), req.GetPresentedName(), "fingerprint "+req.GetFingerprint())
	return &registryv1.RejectPinResponse{Pin: p}, nil
}

// decidePin stores the pin decide makes of the change a tool of ws
// advertises now, which must be the one fingerprint names, and answers the
// pin as it then stands.
func (s *Service) decidePin(ctx context.Context, act, ws, presented, fingerprint string, decide func(stored, now *registryv1.Pin, by string) *registryv1.Pin) (*registryv1.Pin, error) {
	id, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	if fingerprint == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s pin: name the advertised_fingerprint you reviewed (switchboard pins show %s %s)", act, ws, presented)
	}
	st := s.st
	st.mu.Lock()
	if len(st.members[ws]) == 0 || !sees.Sees(ws) {
		st.mu.Unlock()
		return nil, unknownWorkspace(ws)
	}
	tool, ok := st.byName[presented]
	set := st.pinSets[ws][tool.client]
	if !ok || !st.members[ws][tool.client] || set == nil || set.byTool[tool.tool.GetName()] == nil {
		st.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "%s pin: workspace %q has no pinned tool %q", act, ws, presented)
	}
	stored := set.byTool[tool.tool.GetName()]
	now := st.pinView(ws, tool.client, stored)
	if now.GetAdvertised() == nil {
		st.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "%s pin: tool %q advertises in workspace %q exactly what is pinned; there is no change to %s", act, presented, ws, act)
	}
	if now.GetAdvertisedFingerprint() != fingerprint {
		st.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "%s pin: tool %q changed again since fingerprint %s was reviewed; it now advertises %s — review it again", act, presented, fingerprint, now.GetAdvertisedFingerprint())
	}
	next := &registryv1.PinSet{}
	for _, t := range sortedKeys(set.byTool) {
		if t == stored.GetTool() {
			next.Pins = append(next.Pins, decide(stored, now, id.Name))
		} else {
			next.Pins = append(next.Pins, set.byTool[t])
		}
	}
	client, rev := tool.client, set.rev
	st.mu.Unlock()
	written, err := st.records.PutPins(ctx, ws, client, next, rev)
	if errors.Is(err, records.ErrChanged) {
		return nil, status.Errorf(codes.Aborted, "%s pin: the pins of %q in workspace %q changed meanwhile; review the tool again", act, client, ws)
	}
	if err != nil {
		return nil, storeFailed(act+" pin "+presented, err)
	}
	if err := st.waitApplied(ctx, written); err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if set := st.pinSets[ws][client]; set != nil && set.byTool[stored.GetTool()] != nil {
		return st.pinView(ws, client, set.byTool[stored.GetTool()]), nil
	}
	return nil, status.Errorf(codes.Aborted, "%s pin: the pins of %q in workspace %q changed meanwhile", act, client, ws)
}

// SetPinPolicy stores a workspace's pin policy.
func (s *Service) SetPinPolicy(ctx context.Context, req *registryv1.SetPinPolicyRequest) (*registryv1.SetPinPolicyResponse, error) {
	ws := req.GetWorkspace()
	if err := names.CheckWorkspace(ws); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set pin policy: %v", err)
	}
	p := req.GetPolicy()
	if _, known := registryv1.PinPolicy_name[int32(p)]; !known || p == registryv1.PinPolicy_PIN_POLICY_UNSPECIFIED {
		return nil, status.Errorf(codes.InvalidArgument, "set pin policy: policy %v is none of off, warn and hold", p)
	}
	rev, err := s.st.records.PutPolicy(ctx, ws, p)
	if err != nil {
		return nil, storeFailed("set the pin policy of workspace "+ws, err)
	}
	if err := s.st.waitApplied(ctx, rev); err != nil {
		return nil, err
	}
	if p == registryv1.PinPolicy_PIN_POLICY_OFF {
		// Off pins changes as they come: the changed tools of the
		// workspace's members are pinned now.
		s.st.mu.Lock()
		clients := sortedKeys(s.st.members[ws])
		s.st.mu.Unlock()
		for _, c := range clients {
			if err := s.st.pinAdvertised(ctx, c); err != nil {
				return nil, err
			}
		}
	}
	s.st.act(ctx, "pin.policy", ws, ws, "policy "+pins.PolicyName(p))
	return &registryv1.SetPinPolicyResponse{Policy: p}, nil
}

// GetPinPolicy reads a workspace's pin policy.
func (s *Service) GetPinPolicy(ctx context.Context, req *registryv1.GetPinPolicyRequest) (*registryv1.GetPinPolicyResponse, error) {
	ws := req.GetWorkspace()
	_, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	if names.CheckWorkspace(ws) != nil || !sees.Sees(ws) {
		return nil, unknownWorkspace(ws)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return &registryv1.GetPinPolicyResponse{Policy: pins.PolicyOf(s.st.policies[ws])}, nil
}
