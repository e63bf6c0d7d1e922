package testkit

import (
	"slices"
	"testing"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// CheckPolicy fails t unless policy names the grades of every method of
// every service in descs, and names no method that none of them has (a
// renamed or removed RPC whose entry stayed behind).
func CheckPolicy(t testing.TB, policy identity.Policy, descs ...*grpc.ServiceDesc) {
	t.Helper()
	missing, extra := PolicyGaps(policy, descs...)
	for _, m := range missing {
		t.Errorf("the policy has no entry for %s: every RPC names the grades that may call it", m)
	}
	for _, m := range extra {
		t.Errorf("the policy names %s, which no service here has", m)
	}
}

// PolicyGaps returns the full method names of descs that policy lacks, and
// the entries of policy that name no method of descs, each sorted.
func PolicyGaps(policy identity.Policy, descs ...*grpc.ServiceDesc) (missing, extra []string) {
	methods := map[string]bool{}
	for _, sd := range descs {
		for _, m := range sd.Methods {
			methods["/"+sd.ServiceName+"/"+m.MethodName] = true
		}
		for _, s := range sd.Streams {
			methods["/"+sd.ServiceName+"/"+s.StreamName] = true
		}
	}
	for m := range methods {
		if _, ok := policy[m]; !ok {
			missing = append(missing, m)
		}
	}
	for m := range policy {
		if !methods[m] {
			extra = append(extra, m)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}
