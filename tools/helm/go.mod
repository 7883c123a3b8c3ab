module ironet.io/tools/helm

go 1.26.0

tool helm.sh/helm/v3/cmd/helm
