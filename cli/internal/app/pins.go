package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
)

const pinsUsage = "usage: switchboard pins ls <workspace> [--all] | show <workspace> <tool> " +
	"| approve <workspace> <tool> [--fingerprint FP] | reject <workspace> <tool> [--fingerprint FP] | policy <workspace> [off|warn|hold]"

// runPins: the tool pins of a workspace (docs/security.md, "Tool pins").
func runPins(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "pins", usagef("%s", pinsUsage))
	}
	sub, args := args[0], args[1:]
	wantArgs := map[string][2]int{"ls": {1, 1}, "show": {2, 2}, "approve": {2, 2}, "reject": {2, 2}, "policy": {1, 2}}[sub]
	if wantArgs[0] == 0 {
		return fail(std, "pins", usagef("unknown pins command %q: want ls, show, approve, reject or policy", sub))
	}
	fs := envflag.NewFlagSet("pins "+sub, std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	all := fs.Bool("all", false, "list every pin, not only those whose tool changed")
	fingerprint := fs.String("fingerprint", "", "the advertised fingerprint reviewed (pins show prints it); default: the one advertised now, whose change is printed first")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "pins "+sub, err)
	}
	if len(pos) < wantArgs[0] || len(pos) > wantArgs[1] {
		return fail(std, "pins "+sub, usagef("%s", pinsUsage))
	}
	var policy registryv1.PinPolicy
	if sub == "policy" && len(pos) == 2 {
		if policy, err = pins.ParsePolicy(pos[1]); err != nil {
			return fail(std, "pins policy", usagef("%v", err))
		}
	}
	conn, ctx, done, err := rf.Open(ctx, 30*time.Second)
	if err != nil {
		return fail(std, "pins "+sub, err)
	}
	defer done()
	reg := registryv1.NewRegistryServiceClient(conn.Registry())
	ws := pos[0]
	switch sub {
	case "ls":
		res, err := reg.ListPins(ctx, &registryv1.ListPinsRequest{Workspace: ws, All: *all})
		if err != nil {
			return fail(std, "pins ls", rpcError(err))
		}
		fmt.Fprintf(std.Stdout, "workspace %s: pin policy %s\n", ws, pins.PolicyName(res.GetPolicy()))
		w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TOOL\tSTATE\tCHANGED\tPINNED\tBY")
		for _, p := range res.GetPins() {
			by := p.GetPinnedBy()
			if by == "" {
				by = "first advertisement"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", p.GetPresentedName(), pins.StateName(p.GetState()), orDash(strings.Join(p.GetChanged(), ",")),
				p.GetPinnedAt().AsTime().Local().Format(time.DateTime), by)
		}
		w.Flush()
	case "show", "approve", "reject":
		p, err := findPin(ctx, reg, ws, pos[1])
		if err != nil {
			return fail(std, "pins "+sub, err)
		}
		if sub == "show" || *fingerprint == "" {
			writeChange(std.Stdout, p)
		}
		if sub == "show" {
			return 0
		}
		fp := *fingerprint
		if fp == "" {
			fp = p.GetAdvertisedFingerprint()
		}
		var now *registryv1.Pin
		if sub == "approve" {
			res, err := reg.ApprovePin(ctx, &registryv1.ApprovePinRequest{Workspace: ws, PresentedName: pos[1], Fingerprint: fp})
			if err != nil {
				return fail(std, "pins approve", rpcError(err))
			}
			now = res.GetPin()
		} else {
			res, err := reg.RejectPin(ctx, &registryv1.RejectPinRequest{Workspace: ws, PresentedName: pos[1], Fingerprint: fp})
			if err != nil {
				return fail(std, "pins reject", rpcError(err))
			}
			now = res.GetPin()
		}
		fmt.Fprintf(std.Stdout, "%s %s in %s: %s\n", map[string]string{"approve": "approved", "reject": "rejected"}[sub], pos[1], ws, pins.StateName(now.GetState()))
	case "policy":
		if policy == registryv1.PinPolicy_PIN_POLICY_UNSPECIFIED {
			res, err := reg.GetPinPolicy(ctx, &registryv1.GetPinPolicyRequest{Workspace: ws})
			if err != nil {
				return fail(std, "pins policy", rpcError(err))
			}
			fmt.Fprintln(std.Stdout, pins.PolicyName(res.GetPolicy()))
			return 0
		}
		if _, err := reg.SetPinPolicy(ctx, &registryv1.SetPinPolicyRequest{Workspace: ws, Policy: policy}); err != nil {
			return fail(std, "pins policy", rpcError(err))
		}
		fmt.Fprintf(std.Stdout, "workspace %s: pin policy %s\n", ws, pins.PolicyName(policy))
	}
	return 0
}

// findPin is the pin of tool in ws, with its state.
func findPin(ctx context.Context, reg registryv1.RegistryServiceClient, ws, tool string) (*registryv1.Pin, error) {
	res, err := reg.ListPins(ctx, &registryv1.ListPinsRequest{Workspace: ws, All: true})
	if err != nil {
		return nil, rpcError(err)
	}
	for _, p := range res.GetPins() {
		if p.GetPresentedName() == tool {
			return p, nil
		}
	}
	return nil, fmt.Errorf("workspace %q has no pinned tool %q; pins ls %s --all lists them", ws, tool, ws)
}

// writeChange prints how the tool advertised now differs from its pin,
// field by field, the pinned lines marked - and the advertised ones +.
func writeChange(out io.Writer, p *registryv1.Pin) {
	fmt.Fprintf(out, "%s in %s: %s\n", p.GetPresentedName(), p.GetWorkspace(), pins.StateName(p.GetState()))
	if p.GetAdvertised() == nil {
		fmt.Fprintf(out, "advertised as pinned (fingerprint %s)\n", p.GetFingerprint())
		return
	}
	for _, field := range p.GetChanged() {
		fmt.Fprintf(out, "%s:\n", field)
		for _, l := range strings.Split(pins.Field(p.GetPinned(), field), "\n") {
			fmt.Fprintf(out, "- %s\n", l)
		}
		for _, l := range strings.Split(pins.Field(p.GetAdvertised(), field), "\n") {
			fmt.Fprintf(out, "+ %s\n", l)
		}
	}
	fmt.Fprintf(out, "pinned fingerprint %s\nadvertised fingerprint %s\n", p.GetFingerprint(), p.GetAdvertisedFingerprint())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
