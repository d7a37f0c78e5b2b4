package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/kiln-dev/kiln/examples"
)

func main() {
	printOnly := flag.Bool("print", false, "print the image references by digest without pushing")
	dtk := flag.String("dtk", "", "also push this driver-toolkit stand-in tarball (hack/dtk.sh) as the release's driver-toolkit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *printOnly, *dtk); err != nil {
		fmt.Fprintln(os.Stderr, "examplebase:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, printOnly bool, dtk string) error {
	images, err := examples.Images()
	if err != nil {
		return err
	}
	var refs []string
	if printOnly {
		for _, n := range images {
			ref, err := n.Ref()
			if err != nil {
				return err
			}
			refs = append(refs, ref)
		}
	} else if refs, err = examples.Push(ctx, "", images); err != nil {
		return err
	}
	if dtk != "" && !printOnly {
		ref, err := examples.PushDriverToolkit(ctx, "", dtk)
		if err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	for _, r := range refs {
		fmt.Println(r)
	}
	return nil
}
