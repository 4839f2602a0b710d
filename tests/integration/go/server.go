// A Go net/http server for connscope's tests: one goroutine accepts
// (net/http's accept loop: accept until EAGAIN, then park in the runtime's
// netpoller), a goroutine per connection serves it. Usage: server PORT.
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: server PORT")
		os.Exit(2)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// /sleep/: a handler that waits 2 ms, as one that calls a backend.
	http.HandleFunc("/sleep/", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
		fmt.Fprintln(w, "slept")
	})
	err := http.ListenAndServe("127.0.0.1:"+os.Args[1], nil)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
