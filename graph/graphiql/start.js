// Starts GraphiQL on cairn's endpoint: queries and mutations by POST, subscriptions over a
// websocket (graphql-transport-ws). The websocket sends the headers of GraphiQL's headers editor
// (an Authorization header under --auth) in its connection_init payload, as cairn expects.
(function () {
  var base = location.pathname.replace(/[^/]*$/, '');
  var url = location.origin + base + 'graphql';
  var wsUrl = (location.protocol === 'https:' ? 'wss:' : 'ws:') + '//' + location.host + base + 'graphql';
  var headers = function () {
    try {
      return JSON.parse(localStorage.getItem('graphiql:headers') || '{}') || {};
    } catch (e) {
      return {};
    }
  };
  var wsClient = graphqlWs.createClient({ url: wsUrl, lazy: true, connectionParams: headers });
  var fetcher = GraphiQL.createFetcher({ url: url, wsClient: wsClient });
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      shouldPersistHeaders: true,
      defaultQuery: 'subscription {\n  workflowEvents {\n    cursor\n    type\n    at\n    workflow { id type status state }\n  }\n}\n',
    }),
  );
})();
