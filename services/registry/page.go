package registry

import (
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/services/registry/internal/pages"
)

// Paging a listing (docs/design.md §3): the page request checked, and the
// page filled from a sorted listing.

// page is a checked page request: where it starts and how much it holds.
type page struct {
	after string
	size  int
}

// pageOf checks a page request of listing for workspace.
func pageOf(listing pages.Listing, workspace string, size int32, token string) (page, error) {
	n, err := pages.Size(size)
	if err != nil {
		return page{}, status.Error(codes.InvalidArgument, err.Error())
	}
	after, err := pages.After(token, listing, workspace)
	if err != nil {
		return page{}, status.Error(codes.InvalidArgument, err.Error())
	}
	return page{after: after, size: n}, nil
}

// fill builds the page: the items of sorted after the cursor, each built
// with build, until the page holds its size or its bytes. It returns them
// with the token of the next page ("" on the last).
func fill[T any, M proto.Message](p page, listing pages.Listing, ws string, sorted []T, key func(T) string, build func(T) M) ([]M, string) {
	i, _ := slices.BinarySearchFunc(sorted, p.after, func(item T, after string) int { return strings.Compare(key(item), after) })
	if i < len(sorted) && key(sorted[i]) == p.after {
		i++
	}
	var out []M
	bytes := 0
	for ; i < len(sorted); i++ {
		m := build(sorted[i])
		out = append(out, m)
		if bytes += proto.Size(m); len(out) >= p.size || bytes >= pages.MaxBytes {
			break
		}
	}
	if i < len(sorted)-1 {
		return out, pages.Token(listing, ws, key(sorted[i]))
	}
	return out, ""
}
