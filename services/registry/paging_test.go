package registry_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestListingsComeInPages: each page holds at most page_size items, the
// pages together hold the listing in order, and a bad page token is
// refused with a sentence.
func TestListingsComeInPages(t *testing.T) {
	t.Parallel()
	e := serve(t, nil, noDev)
	const clients = 25
	var wantClients, wantTools []string
	for i := range clients {
		c := fmt.Sprintf("c%02d", i)
		e.advertise(c, tools("a", "b", "c")...)
		e.register("big", c)
		wantClients = append(wantClients, c)
		wantTools = append(wantTools, c+"_a", c+"_b", c+"_c")
	}
	e.register("other", "c00")

	var got []string
	token, pages := "", 0
	for {
		res, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "big", PageSize: 10, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) > 10 {
			t.Fatalf("page %d holds %d rows, more than the 10 asked for", pages, len(res.Rows))
		}
		for _, r := range res.Rows {
			got = append(got, r.Client)
		}
		pages++
		if token = res.NextPageToken; token == "" {
			break
		}
	}
	if pages != 3 || !slices.Equal(got, wantClients) {
		t.Fatalf("%d pages of %v, want 3 pages of %v", pages, got, wantClients)
	}
	got, token, pages = nil, "", 0
	var clientsToken string
	for {
		res, err := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "big", PageSize: 7, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range res.Tools {
			got = append(got, pt.PresentedName)
		}
		pages++
		if token = res.NextPageToken; token == "" {
			break
		}
		clientsToken = token
	}
	if pages != 11 || !slices.Equal(got, wantTools) {
		t.Fatalf("%d pages of %v, want 11 pages of %v", pages, got, wantTools)
	}

	// The default page is 100 rows; a page past the maximum is cut to it.
	res, err := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "big", PageSize: 1 << 20})
	if err != nil || len(res.Tools) != 3*clients || res.NextPageToken != "" {
		t.Fatalf("one page of everything: %d tools, token %q, %v", len(res.GetTools()), res.GetNextPageToken(), err)
	}

	sentence := func(token, listing, ws string) string {
		return fmt.Sprintf("page_token %q is not one this registry gave for the %s of workspace %q; list again without a page_token to start over", token, listing, ws)
	}
	for _, tc := range []struct {
		name, msg string
		call      func() error
	}{
		{"a token that is not one", sentence("garbage", "clients", "big"), func() error {
			_, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "big", PageToken: "garbage"})
			return err
		}},
		{"a token of another listing", sentence(clientsToken, "clients", "big"), func() error {
			_, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "big", PageToken: clientsToken})
			return err
		}},
		{"a token of another workspace", sentence(clientsToken, "tools", "other"), func() error {
			_, err := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "other", PageToken: clientsToken})
			return err
		}},
		{"a negative page size", "page_size -1 is negative: send 0 for the default (100), or up to 1000", func() error {
			_, err := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "big", PageSize: -1})
			return err
		}},
	} {
		testkit.Refused(t, tc.call(), codes.InvalidArgument, tc.msg)
	}
}

// TestAPageEndsAtItsByteBound: whatever the page size, a page ends once it
// holds 4 MiB, so that it fits one message.
func TestAPageEndsAtItsByteBound(t *testing.T) {
	t.Parallel()
	e := serve(t, nil, noDev)
	big := strings.Repeat("d", 3<<19) // 1.5 MiB a row
	for i := range 4 {
		c := fmt.Sprintf("c%d", i)
		e.advertise(c, &registryv1.Tool{Name: "t", Description: big, InputSchema: `{"type":"object"}`})
		e.register("big", c)
	}
	res, err := e.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "big"})
	if err != nil || len(res.Rows) != 3 || res.NextPageToken == "" {
		t.Fatalf("the first page holds %d rows (token %q, %v); want 3, then more", len(res.GetRows()), res.GetNextPageToken(), err)
	}
	if rows := listClients(t, e, "big"); len(rows) != 4 {
		t.Fatalf("all pages hold %d rows, want 4", len(rows))
	}
}
