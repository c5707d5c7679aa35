package graph

//go:generate sh -c "cd .. && go tool gqlgen generate --config gqlgen.yml"
