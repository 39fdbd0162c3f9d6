import { render } from 'solid-js/web'
import { App } from './App'
import './manage.css'

render(() => <App />, document.getElementById('root')!)
