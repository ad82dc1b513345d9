// Package e2e drives the real boxoffice binary in Chromium with Playwright:
// each test starts the binary on a free port with a database and Redis key
// prefix of its own. Playwright and Chromium start once per test binary.
//
// The browser and the driver come from the machine (scripts/e2e-deps.sh):
// CHROMIUM_PATH, PLAYWRIGHT_DRIVER_PATH and PLAYWRIGHT_NODEJS_PATH; nothing is
// downloaded.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/store/storetest"
	"github.com/mxschmitt/playwright-go"
)

var (
	binary  string
	browser playwright.Browser
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "boxoffice-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "boxoffice")
	if out, err := exec.Command("go", "build", "-o", binary, "../web").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build boxoffice: %v\n%s", err, out)
		return 1
	}
	driver := os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	chromium := os.Getenv("CHROMIUM_PATH")
	if driver == "" || chromium == "" {
		fmt.Fprintln(os.Stderr, "e2e: PLAYWRIGHT_DRIVER_PATH and CHROMIUM_PATH are not set: run the browser tests with `make test` or `make e2e`")
		return 1
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: driver, SkipInstallBrowsers: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start Playwright: %v\n", err)
		return 1
	}
	defer pw.Stop()
	browser, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(chromium),
		Headless:       playwright.Bool(true),
		Args: []string{"--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "launch Chromium: %v\n", err)
		return 1
	}
	defer browser.Close()
	return m.Run()
}

// app is one running boxoffice binary.
type app struct {
	URL         string
	DatabaseURL string
	RedisPrefix string
}

// startApp runs the binary on a free port with its own database and Redis
// prefix, waits until /readyz answers, and stops it (SIGTERM) when t ends.
// env adds variables ("NAME=value").
func startApp(t *testing.T, env ...string) *app {
	t.Helper()
	port := freePort(t)
	a := &app{
		URL:         fmt.Sprintf("http://127.0.0.1:%d", port),
		DatabaseURL: storetest.NewDatabaseURL(t),
		// Its keys are deleted after the app stops: t.Cleanup runs last
		// what was registered first.
		RedisPrefix: storetest.MustOpenRedis(t).Prefix,
	}
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("ADDR=127.0.0.1:%d", port), "BASE_URL="+a.URL, "DATABASE_URL="+a.DatabaseURL,
		"REDIS_URL="+storetest.RedisURL(), "REDIS_PREFIX="+a.RedisPrefix, "LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start boxoffice: %v", err)
	}
	go func() { // the server's warnings and errors, in the test's log
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			t.Log("server:", s.Text())
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("boxoffice exited with %v", err)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Error("boxoffice did not stop within 20 s of SIGINT")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		resp, err := http.Get(a.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("boxoffice did not become ready at %s", a.URL)
	return nil
}

// The app's Redis keys are gone once its test ends.
func TestStartApp_DeletesRedisKeys(t *testing.T) {
	var prefix string
	t.Run("App", func(t *testing.T) {
		a := startApp(t)
		prefix = a.RedisPrefix
		resp, err := http.PostForm(a.URL+"/signup", url.Values{"email": {"keys@example.com"}, "password": {"correct horse"}, "name": {"Keys"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := redisKeys(t, prefix); n == 0 {
			t.Fatalf("no Redis keys under %s after a sign-up, want a session", prefix)
		}
	})
	if n := redisKeys(t, prefix); n != 0 {
		t.Errorf("%d Redis keys under %s after the test, want 0", n, prefix)
	}
}

func redisKeys(t *testing.T, prefix string) int {
	t.Helper()
	keys, err := storetest.Keys(context.Background(), storetest.MustOpenRedis(t), prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// newPage opens a page in a fresh browser context (its own cookies), closed
// when t ends.
func newPage(t *testing.T) playwright.Page {
	t.Helper()
	bctx, err := browser.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bctx.Close() })
	page, err := bctx.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	page.SetDefaultTimeout(10000)
	logErrors(t, page)
	return page
}

// logErrors logs the page's script errors and console errors to t, so that
// a wait that times out on a broken script says why.
func logErrors(t *testing.T, page playwright.Page) {
	page.OnPageError(func(err error) { t.Logf("%s: script error: %v", page.URL(), err) })
	page.OnConsole(func(m playwright.ConsoleMessage) {
		if m.Type() == "error" {
			t.Logf("%s: console: %s", page.URL(), m.Text())
		}
	})
}

// screenshot saves the page as e2e/screenshots/<name>.png (git-ignored), for
// people to look at what the tests saw.
func screenshot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	saveScreenshot(t, page, name, true)
}

// viewportScreenshot saves what the viewport shows, as a phone's screen
// does with its fixed bottom bar, as e2e/screenshots/<name>.png.
func viewportScreenshot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	saveScreenshot(t, page, name, false)
}

func saveScreenshot(t *testing.T, page playwright.Page, name string, fullPage bool) {
	t.Helper()
	dir, err := filepath.Abs("screenshots") // the driver resolves paths from its own folder
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatalf("screenshot folder: %v", err)
	}
	if _, err := page.Screenshot(playwright.PageScreenshotOptions{
		Path:     playwright.String(filepath.Join(dir, name+".png")),
		FullPage: playwright.Bool(fullPage),
	}); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
	}
}

// must fails the test on err, naming what was being done.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text returns the trimmed text of the element with data-testid=id.
func text(t *testing.T, page playwright.Page, id string) string {
	t.Helper()
	s, err := page.GetByTestId(id).First().TextContent()
	must(t, "read "+id, err)
	return strings.TrimSpace(s)
}

// count returns the data-count of the element with data-testid=id: the
// number that a sentence such as "416 seats" or "416석" says.
func count(t *testing.T, page playwright.Page, id string) string {
	t.Helper()
	s, err := page.GetByTestId(id).First().GetAttribute("data-count")
	must(t, "read "+id, err)
	return s
}

// waitForURL waits until page is at url (a glob string or a
// *regexp.Regexp, as Playwright's WaitForURL takes it, with its options). When the page is not there in time, the test
// fails with where the page is instead, the first 2,000 characters it reads
// and a screenshot of its viewport (e2e/screenshots/lost-<test>.png): a
// click that led elsewhere, or nowhere, leaves nothing else to say why.
func waitForURL(t *testing.T, page playwright.Page, what string, url any, opts ...playwright.PageWaitForURLOptions) {
	t.Helper()
	err := page.WaitForURL(url, opts...)
	if err == nil {
		return
	}
	body, readErr := page.Locator("body").InnerText(playwright.LocatorInnerTextOptions{Timeout: playwright.Float(5000)})
	if readErr != nil {
		body = "(unreadable: " + readErr.Error() + ")"
	} else if len(body) > 2000 {
		body = body[:2000] + "…"
	}
	saveScreenshot(t, page, "lost-"+strings.ReplaceAll(t.Name(), "/", "-"), false)
	t.Fatalf("%s: %v\nthe page is at %s and reads:\n%s", what, err, page.URL(), body)
}
