// The function's handler: a plain net/http handler. The program runs once per request as a
// CGI script (Spin's WAGI executor): the request arrives in the environment and on stdin,
// cgi.Serve writes the response to stdout. Build: GOOS=wasip1 GOARCH=wasm go build.
package main

import (
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
)

func handle(w http.ResponseWriter, r *http.Request) {
	// stderr is the application's log.
	fmt.Fprintf(os.Stderr, "{{function}}: %s %s\n", r.Method, r.URL.Path)
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Request-Path", r.URL.Path)
	fmt.Fprintln(w, "hello from {{function}}")
}

func main() {
	if err := cgi.Serve(http.HandlerFunc(handle)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
