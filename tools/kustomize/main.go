// Command kustomize-build renders a kustomization folder as `kustomize build`
// does, with the kustomize API pinned in go.mod (sigs.k8s.io/kustomize/api),
// for the tests of examples/metal3-kustomize. Remote resources are not
// fetched: the tests point the overlay at a local copy of its base.
//
//	kustomize-build <folder>
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize-build <folder with a kustomization.yaml>")
		os.Exit(2)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "kustomize build %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	out, err := resources.AsYaml()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kustomize build %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
