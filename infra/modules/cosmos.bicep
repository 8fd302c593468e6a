// Cosmos DB for NoSQL: the event store and every projection (ARCHITECTURE §5), with vector search (DiskANN) and
// full-text search (BM25) enabled on the account. Key auth is disabled: the app uses its identity
// (Cosmos DB Built-in Data Contributor, see roles.bicep).
//
// `containers` mirrors COSMOS_CONTAINERS in shared/adapters/cosmos/containers.ts, and the container resource builds
// exactly what containerDefinitions(embeddingDimensions) builds there; test/integration/infra.test.ts evaluates this
// file and compares both, so change them together.

param accountName string
param location string
param tags object
param databaseName string

@minValue(8)
@maxValue(4096)
@description('Dimensions of every vector path. A container\'s vector embedding policy is fixed when it is created.')
param embeddingDimensions int

@description('Serverless capacity (pay per request); false gives each container autoscale throughput.')
param serverless bool = true

@description('Autoscale maximum RU/s per container when not serverless.')
param autoscaleMaxThroughput int = 1000

var fullTextLanguage = 'en-US'

// partitionKey: one logical partition holds one user's memory; the change-feed leases use /id.
// defaultTtl: -1 turns TTL on without a default (items set their own `ttl`); null leaves TTL off.
var containers = [
  {
    name: 'events'
    partitionKey: '/userId'
    defaultTtl: -1
    vectorPaths: []
    fullTextPaths: []
    compositeIndexes: [
      [
        '/sessionId'
        '/seq'
      ]
    ]
  }
  {
    name: 'sessions'
    partitionKey: '/userId'
    defaultTtl: -1
    vectorPaths: [
      '/summaryVector'
    ]
    fullTextPaths: [
      '/summary'
    ]
    compositeIndexes: [
      [
        '/status'
        '/lastActivityAt'
      ]
    ]
  }
  {
    name: 'interactions'
    partitionKey: '/userId'
    defaultTtl: -1
    vectorPaths: [
      '/contentVector'
      '/summaryVector'
    ]
    fullTextPaths: [
      '/content'
      '/summary'
    ]
    compositeIndexes: []
  }
  {
    name: 'insights'
    partitionKey: '/userId'
    defaultTtl: -1
    vectorPaths: [
      '/insightVector'
    ]
    fullTextPaths: [
      '/text'
    ]
    compositeIndexes: []
  }
  {
    name: 'artifacts'
    partitionKey: '/userId'
    defaultTtl: -1
    vectorPaths: []
    fullTextPaths: [
      '/description'
    ]
    compositeIndexes: []
  }
  {
    // Slot streams (core memory): one item per event; global slots in the partition '~global'.
    name: 'slots'
    partitionKey: '/userId'
    defaultTtl: null
    vectorPaths: []
    fullTextPaths: []
    compositeIndexes: [
      [
        '/stream'
        '/version'
      ]
    ]
  }
  {
    name: 'forgets'
    partitionKey: '/userId'
    defaultTtl: null
    vectorPaths: []
    fullTextPaths: []
    compositeIndexes: []
  }
  {
    // Sessions whose projection may be pending: one item per queued session, served slice by slice.
    name: 'projectionQueue'
    partitionKey: '/userId'
    defaultTtl: null
    vectorPaths: []
    fullTextPaths: []
    compositeIndexes: [
      [
        '/servedAt'
        '/queuedAt'
      ]
    ]
  }
  {
    name: 'apiKeys'
    partitionKey: '/id'
    defaultTtl: null
    vectorPaths: []
    fullTextPaths: []
    compositeIndexes: []
  }
  {
    name: 'leases'
    partitionKey: '/id'
    defaultTtl: null
    vectorPaths: []
    fullTextPaths: []
    compositeIndexes: []
  }
]

resource account 'Microsoft.DocumentDB/databaseAccounts@2025-10-15' = {
  name: accountName
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    locations: [
      {
        locationName: location
        failoverPriority: 0
        isZoneRedundant: false
      }
    ]
    consistencyPolicy: {
      defaultConsistencyLevel: 'Session'
    }
    capabilities: union(
      [
        {
          name: 'EnableNoSQLVectorSearch'
        }
        {
          name: 'EnableNoSQLFullTextSearch'
        }
      ],
      serverless
        ? [
            {
              name: 'EnableServerless'
            }
          ]
        : []
    )
    disableLocalAuth: true
    disableKeyBasedMetadataWriteAccess: true
    minimalTlsVersion: 'Tls12'
    publicNetworkAccess: 'Enabled'
    backupPolicy: {
      type: 'Continuous'
      continuousModeProperties: {
        tier: 'Continuous7Days'
      }
    }
  }
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2025-10-15' = {
  parent: account
  name: databaseName
  properties: {
    resource: {
      id: databaseName
    }
  }
}

resource sqlContainers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2025-10-15' = [for container in containers: {
  parent: database
  name: container.name
  properties: {
    options: serverless
      ? {}
      : {
          autoscaleSettings: {
            maxThroughput: autoscaleMaxThroughput
          }
        }
    resource: union(
      {
        id: container.name
        partitionKey: {
          paths: [
            container.partitionKey
          ]
          kind: 'Hash'
          version: 2
        }
        indexingPolicy: union(
          {
            indexingMode: 'consistent'
            automatic: true
            includedPaths: [
              {
                path: '/*'
              }
            ]
            // Vectors are served by their vector index; range-indexing every float would only cost RUs and storage.
            excludedPaths: concat(
              [
                {
                  path: '/"_etag"/?'
                }
              ],
              map(container.vectorPaths, path => {
                path: '${path}/*'
              })
            )
          },
          empty(container.vectorPaths)
            ? {}
            : {
                vectorIndexes: map(container.vectorPaths, path => {
                  path: path
                  type: 'diskANN'
                })
              },
          empty(container.fullTextPaths)
            ? {}
            : {
                fullTextIndexes: map(container.fullTextPaths, path => {
                  path: path
                })
              },
          empty(container.compositeIndexes)
            ? {}
            : {
                compositeIndexes: map(container.compositeIndexes, paths => map(paths, path => {
                  path: path
                  order: 'ascending'
                }))
              }
        )
      },
      container.defaultTtl == null
        ? {}
        : {
            defaultTtl: container.defaultTtl
          },
      empty(container.vectorPaths)
        ? {}
        : {
            vectorEmbeddingPolicy: {
              vectorEmbeddings: map(container.vectorPaths, path => {
                path: path
                dataType: 'float32'
                distanceFunction: 'cosine'
                dimensions: embeddingDimensions
              })
            }
          },
      empty(container.fullTextPaths)
        ? {}
        : {
            fullTextPolicy: {
              defaultLanguage: fullTextLanguage
              fullTextPaths: map(container.fullTextPaths, path => {
                path: path
                language: fullTextLanguage
              })
            }
          }
    )
  }
}]

output accountName string = account.name
output id string = account.id
output endpoint string = account.properties.documentEndpoint
output databaseName string = database.name
output containerNames array = [for (container, i) in containers: sqlContainers[i].name]
