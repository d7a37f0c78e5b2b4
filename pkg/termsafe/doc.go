// Package termsafe makes text from outside kiln (a registry's error
// message, a cause file, a pipeline param, an object's name) safe to print
// on a terminal or a log pane: a control character or a byte that is not
// UTF-8 could otherwise clear the screen, fake a line of output, retitle
// the window or reorder what a reader sees.
package termsafe
