// The function's handler: Spin calls it for every request on the function's route.
package main

import (
	"fmt"
	"net/http"

	spinhttp "github.com/spinframework/spin-go-sdk/v2/http"
)

func init() {
	spinhttp.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Request-Path", r.URL.Path)
		fmt.Fprintln(w, "hello from {{function}}")
	})
}

func main() {}
