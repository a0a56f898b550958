// Package adapterproc runs the adapter binary as the end-to-end and cluster
// tests run it: a child tied to its parent's life, and `adapter check` on
// the tables a test wrote. It knows the adapter's command line only, not
// what the tests check with it.
package adapterproc
