package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
)

// The console end to end, in headless Chromium: an operator signs in,
// watches a tool host's tools arrive, tries a tool, mounts a server and
// revokes a token, all through the page.

// browserPath is where the Debian chromium package puts the browser;
// `make tools` installs it.
const browserPath = "/usr/bin/chromium"

// browserWait bounds each step's wait for the page: a hang guard; the
// steps themselves take milliseconds.
const browserWait = 60 * time.Second

// browser starts headless Chromium for the test. It skips only when the
// browser is missing and SWITCHBOARD_REQUIRE_BROWSER is unset (CI sets it,
// so CI fails rather than skips).
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := browserPath
	if _, err := os.Stat(exe); err != nil {
		if p, lerr := exec.LookPath("chromium"); lerr == nil {
			exe = p
		} else if os.Getenv("SWITCHBOARD_REQUIRE_BROWSER") == "" {
			t.Skipf("skipping the console's browser test: %s is missing (install it with `make tools` or `apt-get install chromium`; set SWITCHBOARD_REQUIRE_BROWSER=1 to fail instead)", browserPath)
		} else {
			t.Fatalf("SWITCHBOARD_REQUIRE_BROWSER is set and %s is missing: run `make tools`", browserPath)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 { // Chromium refuses to sandbox itself as root
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Confirmation dialogs (revoke, unmount) are accepted, as an operator
	// who clicked the button would.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
				return
			}
		}
	}()
	return ctx
}

// step runs browser actions under the hang guard, failing with what the
// step was for.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.ID("main")))
		t.Fatalf("%s: %v\nthe page's main:\n%s", what, err, body)
	}
}

// read runs one action that reads a value, under the hang guard.
func read[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshots is where the test saves its screenshots: the directory
// SWITCHBOARD_SCREENSHOTS names, or the test's own.
func screenshots(t *testing.T) string {
	if dir := os.Getenv("SWITCHBOARD_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// shot saves a full-page screenshot as name.png.
func shot(dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	})
}

func TestConsoleInTheBrowser(t *testing.T) {
	const devSecret = "the-runs-secret"
	s := newSuite(t, options{configure: func(c *gateway.Config) { c.Security.DevSecret = devSecret }})
	ctx := browser(t)
	dir := screenshots(t)
	// The laptop is registered before it serves, so the page is open when
	// its tools arrive.
	s.join(t, "default", "laptop")

	step(t, ctx, "naming oneself without the run's secret, and being refused",
		chromedp.Navigate(s.URL+"/console/"),
		chromedp.WaitVisible(chromedp.ID("signin-identity")),
		chromedp.SendKeys(chromedp.ID("signin-identity"), "mallory"),
		chromedp.Click(chromedp.ID("signin-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#view .refusal`)),
	)
	if refused := read(t, ctx, "reading the refusal", chromedp.Text(chromedp.CSS(`#view .refusal`))); !strings.Contains(refused, "per-run secret") {
		t.Fatalf("without the secret the page said %q", refused)
	}
	step(t, ctx, "opening the console's link, which carries the run's secret: the name is taken now",
		chromedp.Navigate(s.URL+"/console/#dev-secret="+devSecret),
		chromedp.WaitVisible(`//div[@id="whoami"]//strong[text()="mallory"]`),
	)
	if addr := read(t, ctx, "reading the address", chromedp.Location()); strings.Contains(addr, devSecret) {
		t.Fatalf("the address still shows the secret: %s", addr)
	}
	step(t, ctx, "signing in as ops (dev mode)",
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("signin-identity")),
		chromedp.SendKeys(chromedp.ID("signin-identity"), "ops"),
		chromedp.Click(chromedp.ID("signin-submit")),
		chromedp.WaitVisible(`//div[@id="whoami"]//strong[text()="ops"]`),
		chromedp.WaitVisible(chromedp.CSS(`a[href="#workspace/default"]`)),
		chromedp.Click(chromedp.CSS(`a[href="#workspace/default"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-client="laptop"]`)),
	)

	s.serveLaptop(t)
	step(t, ctx, "watching the laptop's tools arrive live",
		chromedp.WaitVisible(chromedp.CSS(`tr[data-tool="laptop_cat"]`)),
		chromedp.WaitVisible(`//tr[@data-client="laptop"]//span[@class="present"]`),
		shot(dir, "workspace"),
	)

	step(t, ctx, "trying laptop_cat from its form",
		chromedp.Click(chromedp.CSS(`a[href="#tool/laptop_cat"]`)),
		chromedp.WaitVisible(chromedp.ID("f-text")),
		chromedp.SendKeys(chromedp.ID("f-text"), "hello from the browser"),
		chromedp.Click(chromedp.CSS(`form.try button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.capture[data-state="answered"] .stdout`)),
		shot(dir, "try-a-tool"),
	)
	stdout := read(t, ctx, "reading the capture's stdout", chromedp.Text(chromedp.CSS(`.capture .stdout`)))
	if !strings.Contains(stdout, `"text":"hello from the browser"`) {
		t.Fatalf("the capture's stdout is %q", stdout)
	}

	step(t, ctx, "seeing the invocation in the live list",
		chromedp.Click(chromedp.CSS(`a[href="#invocations"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-phase="collected"]`)),
		shot(dir, "invocations"),
	)

	step(t, ctx, "mounting the everything-server from the page",
		chromedp.Navigate(s.URL+"/console/#servers"),
		chromedp.WaitVisible(chromedp.ID("mount-client")),
		chromedp.SendKeys(chromedp.ID("mount-client"), "conf"),
		chromedp.SendKeys(chromedp.ID("mount-command"), testkit.Tool(t, "everything-server")),
		chromedp.Click(chromedp.CSS(`#mount-client ~ button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`article[data-server="conf"][data-state="running"]`)),
		shot(dir, "servers"),
	)

	step(t, ctx, "creating a token, then revoking it",
		chromedp.Navigate(s.URL+"/console/#tokens"),
		chromedp.WaitVisible(chromedp.ID("tok-identity")),
		chromedp.SendKeys(chromedp.ID("tok-identity"), "erin"),
		chromedp.SendKeys(chromedp.ID("tok-note"), "the browser test's"),
		chromedp.Click(chromedp.CSS(`#tok-identity ~ button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("new-secret")),
	)
	secret := read(t, ctx, "reading the new token's secret", chromedp.Value(chromedp.ID("new-secret")))
	step(t, ctx, "revoking the token",
		chromedp.Click(`//tr[td[text()="erin"]]//button`),
		chromedp.WaitNotPresent(`//tr[td[text()="erin"]]`),
		chromedp.WaitNotPresent(chromedp.ID("new-secret")),
		shot(dir, "tokens"),
	)
	if !strings.HasPrefix(secret, "sbt_") {
		t.Fatalf("the page showed the secret %q", secret)
	}

	step(t, ctx, "signing in with the revoked token, and being refused",
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("signin-token")),
		chromedp.SendKeys(chromedp.ID("signin-token"), secret),
		chromedp.Click(chromedp.ID("signin-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#view .refusal`)),
	)
	refused := read(t, ctx, "reading the refusal", chromedp.Text(chromedp.CSS(`#view .refusal`)))
	if !strings.Contains(refused, "token") {
		t.Fatalf("the revoked token's refusal reads %q", refused)
	}

	// The refusal brought the sign-in form back.
	step(t, ctx, "the workspace at phone width",
		chromedp.WaitVisible(chromedp.ID("signin-identity")),
		chromedp.SendKeys(chromedp.ID("signin-identity"), "ops"),
		chromedp.Click(chromedp.ID("signin-submit")),
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(s.URL+"/console/#workspace/default"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-tool="laptop_cat"]`)),
		shot(dir, "phone"),
	)
}
